"""The main table's values: rates, medians with quartiles, and seeded bootstrap intervals."""

import csv
import json
from dataclasses import replace
from pathlib import Path

import pytest

from pmc.points import PointKind
from pmc.report import (
    MainRow,
    RunData,
    Value,
    bootstrap,
    first_look,
    main_table,
    main_tables,
    markdown,
    metrics_for,
    write_main_table,
)
from pmc.report._write import RESULTS_SCHEMA_VERSION, ROLLOUTS_USED
from pmc.scoring import (
    PauseOutcome,
    PauseScore,
    ReplyScore,
    Score,
    ScoreSettings,
    ScoreStatus,
    TalkOver,
    YieldScore,
)
from pmc.systems import Family, ReferenceRow, SystemCard

SETTINGS = ScoreSettings()


def pause(conv: str, outcome: PauseOutcome, latency: float | None = None, k: int = 0) -> Score:
    return Score(
        f"p-{conv}-{outcome}-{latency}-{k}",
        "s",
        0,
        PointKind.PAUSE,
        conv,
        ScoreStatus.SCORED,
        SETTINGS,
        pause=PauseScore(outcome, latency, False, False, False),
    )


def reply(conv: str, latency: float | None, f1: float | None, k: int = 0) -> Score:
    words = 0 if latency is None else 5
    return Score(
        f"t-{conv}-{k}",
        "s",
        0,
        PointKind.TURN_END,
        conv,
        ScoreStatus.SCORED,
        SETTINGS,
        reply=ReplyScore(latency, 1.0 if words else None, words, 1.0, 5, 1.0, 1.0, False, "x", f1),
    )


def test_pause_shares_are_over_rollouts_and_latency_over_takeovers() -> None:
    scores = [
        pause("a", PauseOutcome.TAKEOVER, 0.2),
        pause("a", PauseOutcome.TAKEOVER, 0.6),
        pause("b", PauseOutcome.SILENT),
        pause("c", PauseOutcome.AFTER),
    ]
    values = bootstrap(scores, metrics_for(PointKind.PAUSE), seed=1, resamples=200)
    assert values["takeover"].estimate == 0.5
    assert values["silent"].estimate == 0.25
    assert values["after"].estimate == 0.25
    latency = values["takeover_latency_s"]
    assert latency.estimate == pytest.approx(0.4)
    assert latency.n == 2
    assert latency.q1 == pytest.approx(0.3)
    assert latency.q3 == pytest.approx(0.5)


def test_replies_without_words_are_left_out_of_medians_not_counted_as_zero() -> None:
    scores = [reply("a", 0.5, 0.2), reply("b", 1.5, 0.4), reply("c", None, None)]
    values = bootstrap(scores, metrics_for(PointKind.TURN_END), seed=1, resamples=100)
    assert values["latency_s"].estimate == pytest.approx(1.0)
    assert values["latency_s"].n == 2
    assert values["token_f1"].estimate == pytest.approx(0.3)
    assert values["censored"].estimate == 0.0
    assert values["censored"].n == 3


def test_talk_over_is_a_share_of_rollouts_and_its_length_a_median_over_those() -> None:
    over = TalkOver(1.0, 0.8, 1, ((1.0, 1.8),))
    scores = [
        replace(reply("a", 0.5, 0.2), talk_over=over),
        replace(reply("b", 1.5, 0.4), talk_over=replace(over, duration_s=0.4)),
        reply("c", None, None),
        reply("d", 0.3, 0.1),
    ]
    values = bootstrap(scores, metrics_for(PointKind.TURN_END), seed=1, resamples=100)
    assert (values["talked_over"].estimate, values["talked_over"].n) == (0.5, 4)
    assert values["talk_over_s"].estimate == pytest.approx(0.6)
    assert values["talk_over_s"].n == 2


def test_yields_at_the_resumption_are_over_takeovers_the_person_resumed_over() -> None:
    def taken(conv: str, resumption: YieldScore | None) -> Score:
        score = pause(conv, PauseOutcome.TAKEOVER, 0.2)
        assert score.pause is not None
        return replace(score, pause=replace(score.pause, resumption=resumption))

    scores = [
        taken("a", YieldScore(2.0, True, 0.4, False)),
        taken("b", YieldScore(2.0, False, None, False)),  # talked on to the end
        taken("c", None),  # its talk was over before the person resumed
        pause("d", PauseOutcome.SILENT),
    ]
    values = bootstrap(scores, metrics_for(PointKind.PAUSE), seed=1, resamples=100)
    assert values["yielded_at_resumption"].estimate == 0.5  # of a and b: c and d had none
    assert values["resumption_stop_s"].estimate == pytest.approx(0.4)
    assert values["resumption_stop_s"].n == 1


def test_intervals_resample_conversations_and_repeat_with_the_seed() -> None:
    # Conversation a always takes over, b never: the interval spans both extremes.
    scores = [pause("a", PauseOutcome.TAKEOVER, 0.1, k) for k in range(5)]
    scores += [pause("b", PauseOutcome.SILENT, None, k) for k in range(5)]
    first = bootstrap(scores, metrics_for(PointKind.PAUSE), seed=7, resamples=2000)
    again = bootstrap(scores, metrics_for(PointKind.PAUSE), seed=7, resamples=2000)
    assert first == again
    takeover = first["takeover"]
    assert takeover.estimate == 0.5
    assert (takeover.ci_low, takeover.ci_high) == (0.0, 1.0)


def test_the_main_table_is_written_per_kind_as_markdown_csv_and_json(tmp_path: Path) -> None:

    scores = [pause("a", PauseOutcome.TAKEOVER, 0.2), pause("b", PauseOutcome.SILENT)]
    values = bootstrap(scores, metrics_for(PointKind.PAUSE), seed=3, resamples=50)
    rows = [MainRow("sys", PointKind.PAUSE, 2, 0, 0, values)]
    write_main_table(rows, tmp_path, seed=3, resamples=50)
    md = (tmp_path / "main_table.md").read_text()
    assert "## pause" in md and "| sys | 2 | 0 | 0 | 0 | 0.50" in md
    lines = list(csv.DictReader((tmp_path / "main_table.csv").open()))
    assert {r["metric"] for r in lines} == {
        "silent",
        "takeover",
        "after",
        "takeover_latency_s",
        "yielded_at_resumption",
        "resumption_stop_s",
        "talked_over",
        "talk_over_s",
    }
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["schema_version"] == RESULTS_SCHEMA_VERSION == 3
    assert results["bootstrap"] == {"resamples": 50, "seed": 3, "unit": "conversation"}
    assert results["main_table"][0]["values"]["takeover"]["estimate"] == 0.5


def test_each_kind_is_one_table_in_every_file_with_pipes_escaped(tmp_path: Path) -> None:
    """main_table.md holds estimate and interval; report.md holds Table 3 then Table 14."""
    pauses = {
        "takeover": Value(0.5, 4, None, None, 0.25, 0.75),
        "takeover_latency_s": Value(0.2, 2, 0.1, 0.3, 0.0, 1.5),
    }
    turns = {"latency_s": Value(None, 0)}
    rows = [
        MainRow("a|b", PointKind.PAUSE, 4, 1, 0, pauses),
        MainRow("c", PointKind.PAUSE, 3, 0, 3, pauses, ReferenceRow.NEVER_SPEAK),
        MainRow("c", PointKind.TURN_END, 2, 0, 2, turns, ReferenceRow.NEVER_SPEAK),
        MainRow("d", PointKind.TURN_END, 3, 0, 0, turns, untranscribed=2),
    ]
    assert markdown(rows) == (
        "## pause\n\n"
        "| system | points | no audio | heard, no words | failed | takeover "
        "| takeover_latency_s |\n"
        "|---|---|---|---|---|---|---|\n"
        "| a\\|b | 4 | 0 | 0 | 1 | 0.50 [0.25, 0.75] | 0.20 [0.00, 1.50] |\n"
        "| c (reference: never speak) | 3 | 3 | 0 | 0 | 0.50 [0.25, 0.75] | 0.20 [0.00, 1.50] |\n"
        "\n"
        "## turn end\n\n"
        "| system | points | no audio | heard, no words | failed | latency_s |\n"
        "|---|---|---|---|---|---|\n"
        "| c (reference: never speak) | 2 | 2 | 0 | 0 | - |\n"
        "| d | 3 | 0 | 2 | 0 | - |\n"
    )
    tables = main_tables(rows)
    assert [t.key for t in tables] == [
        "main_pause",
        "intervals_pause",
        "main_turn_end",
        "intervals_turn_end",
    ]
    assert tables[0].rows[0] == ("a|b", 4, 0, 0, 1, "0.50", "0.20 (0.10-0.30)")
    assert tables[1].rows[0] == ("a|b", 4, 0, 0, 1, "[0.25, 0.75]", "[0.00, 1.50]")
    write_main_table(rows, tmp_path, seed=0, resamples=10)
    assert (tmp_path / "main_table.md").read_text() == markdown(rows)
    report = (tmp_path / "report.md").read_text()
    assert report == "\n".join([ROLLOUTS_USED + "\n", *(t.markdown() for t in tables)])
    assert "| a\\|b | 4 | 0 | 0 | 1 | 0.50 | 0.20 (0.10-0.30) |" in report


def test_the_first_look_is_the_main_tables_estimates_and_counts() -> None:
    """What ``pmc score`` prints is read from the main table, so the two never disagree."""
    scores = [
        pause("a", PauseOutcome.SILENT),
        pause("b", PauseOutcome.TAKEOVER, 0.4),
        pause("c", PauseOutcome.TAKEOVER, 0.6),
        pause("d", PauseOutcome.AFTER),
        reply("a", 0.5, 0.2),
        reply("b", 0.9, 0.4),
        reply("c", None, None),
        replace(reply("d", 2.0, 0.1), status=ScoreStatus.TRANSPORT_ERROR),
    ]
    card = SystemCard("s", "endpointer-cascade", Family.LOCAL)
    data = RunData(Path("run"), "r", ("s",), {"s": card}, {"s": None}, {}, {"s": scores}, (), {})
    (look,) = first_look(data)
    assert look.pause is not None
    assert [v.estimate for v in look.pause] == [0.25, 0.5, 0.25]
    assert look.latency is not None and (look.latency.estimate, look.latency.n) == (0.7, 2)
    assert look.recall is None  # no recall points
    assert (look.no_audio, look.untranscribed, look.failed) == (0, 0, 1)
    (main,) = [r for r in main_table(data, resamples=0) if r.kind is PointKind.TURN_END]
    assert look.latency == main.values["latency_s"]
