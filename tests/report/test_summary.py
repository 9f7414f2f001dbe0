"""The summary that leads the report: read from the main table, the person beside it, one figure."""

from __future__ import annotations

from pathlib import Path

import pytest

from pmc.points import PointKind
from pmc.report import RunData, main_table
from pmc.report._aggregate import Value
from pmc.report._lead import write_summary_figure
from pmc.report._summary import held, summary_of
from pmc.scoring import ReplyScore, Score, ScoreSettings, ScoreStatus
from pmc.systems import ReferenceRow
from tests.report.test_analyses import data_of, pause_rollout, point, recorded, talk


def _turn(system: str, conv: str, latency: float) -> Score:
    p = point(f"t-{conv}", PointKind.TURN_END, conv)
    reply = ReplyScore(latency, 1.0, 3, 2.0, 3, 1.5, 1.0, False, "yes yes yes", 0.2, 0.4)
    return Score(
        p.point_id, system, 0, p.kind, conv, ScoreStatus.SCORED, ScoreSettings(), reply=reply
    )


def _run() -> RunData:
    pauses = [point(f"p{i}", PointKind.PAUSE, f"c{i}", 1.0, 1.5) for i in range(4)]
    # The person replied 0.2, 0.4, 0.6 s after the three turn ends.
    turns = [
        point(f"t-c{i}", PointKind.TURN_END, f"c{i}", reply_start_conv_s=1.0 + 0.2 * (i + 1))
        for i in range(3)
    ]
    taker = [
        pause_rollout("taker", p, (talk(1.1, 1.4),) if i < 3 else ()) for i, p in enumerate(pauses)
    ]
    taker += [_turn("taker", f"c{i}", 0.5) for i in range(3)]
    never = [pause_rollout("never", p, ()) for p in pauses]
    cards = {"taker": recorded("endpointer-cascade"), "never": recorded("never-speak")}
    return data_of({"taker": taker, "never": never}, pauses + turns, cards)


def test_the_summary_is_the_main_table_read_as_the_papers_questions() -> None:
    data = _run()
    rows = main_table(data, seed=1, resamples=50)
    summary = summary_of(data, rows)
    assert summary is not None
    # No recall points: the run answers four of the five questions.
    assert [q.key for q in summary.questions] == ["hold", "latency", "length", "similarity"]
    assert summary.person == pytest.approx(
        {"hold": 1.0, "latency": 0.4, "length": 1.0, "similarity": 1.0}
    )
    taker, never = summary.rows
    assert (taker.system, taker.reference) == ("taker", None)
    assert (never.label, never.reference) == ("never (reference)", ReferenceRow.NEVER_SPEAK)
    main = {(r.system, r.kind): r.values for r in rows}
    assert taker.values["hold"] == held(main[("taker", PointKind.PAUSE)]["takeover"])
    assert taker.values["hold"].estimate == pytest.approx(0.25)  # three of four pauses taken
    assert taker.values["latency"] is main[("taker", PointKind.TURN_END)]["latency_s"]
    assert taker.values["length"] is main[("taker", PointKind.TURN_END)]["duration_ratio"]
    assert taker.values["similarity"] is main[("taker", PointKind.TURN_END)]["cosine"]
    assert set(never.values) == {"hold"}  # never ran at the turn ends
    table = summary.table()
    assert table.rows[0] == ("the person", "1.00", "0.40", "1.00", "1.00")
    assert table.rows[2][0] == "never (reference)" and table.rows[2][2:] == ("-", "-", "-")
    assert str(table.rows[1][1]).startswith("0.25 [")


def test_the_hold_rate_turns_the_takeover_interval_round() -> None:
    assert held(Value(0.25, 8, None, None, 0.1, 0.5)) == Value(0.75, 8, None, None, 0.5, 0.9)
    assert held(Value(None, 0)) == Value(None, 0)


def test_a_run_with_nothing_scored_has_no_summary() -> None:
    data = data_of({"a": []}, [])
    assert summary_of(data, main_table(data, resamples=10)) is None


@pytest.mark.filterwarnings("error")
def test_the_summary_figure_is_a_deterministic_png(tmp_path: Path) -> None:
    data = _run()
    summary = summary_of(data, main_table(data, seed=1, resamples=50))
    assert summary is not None
    first = write_summary_figure(tmp_path / "a", data, summary)
    again = write_summary_figure(tmp_path / "b", data, summary)
    assert first.file == "figures/summary.png" and first.key == "summary_figure"
    png = (tmp_path / "a" / first.file).read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert png == (tmp_path / "b" / again.file).read_bytes()
