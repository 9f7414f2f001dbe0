"""The appendix analyses on a run built here: every number is counted by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pmc.asr import TimedWord
from pmc.corpus import Channel
from pmc.points import Point, PointKind
from pmc.report import RunData
from pmc.report._compare import paired_table, pairs_in_run, side
from pmc.report._outcomes import outcomes_table
from pmc.report._pauses import boundary_table, duration_table, tercile_table
from pmc.report._recall import agreement_table, history_table
from pmc.scoring import (
    Evidence,
    PauseOutcome,
    RecallScore,
    RecallVerdict,
    ReplyScore,
    Score,
    ScoreSettings,
    ScoreStatus,
    pause_score,
)
from pmc.scoring._text import strict_recall
from pmc.systems import Family, ReferenceRow, SystemCard, reference_row_of

SETTINGS = ScoreSettings()


def recorded(adapter: str, **params: Any) -> SystemCard:
    """A card as ``run.json`` records it."""
    return SystemCard.from_dict(SystemCard(adapter, adapter, Family.LOCAL, params=params).to_dict())


CARD = recorded("endpointer-cascade")


def point(
    pid: str, kind: PointKind, conv: str, start: float = 1.0, end: float = 1.0, **kw: object
) -> Point:
    return Point(
        pid,
        kind,
        conv,
        Channel.A,
        Channel.B,
        0.0,
        0.0,
        start,
        start,
        end,
        end,
        end + 2.0,
        **kw,  # type: ignore[arg-type]
    )


def talk(start: float, end: float) -> Evidence:
    return Evidence(start, end, (TimedWord("yes", start, end, 0.9),), start)


def pause_rollout(system: str, p: Point, found: tuple[Evidence, ...]) -> Score:
    scored = pause_score(found, p.boundary_stream_s, p.boundary_end_stream_s)
    return Score(
        p.point_id,
        system,
        0,
        p.kind,
        p.conversation_id,
        ScoreStatus.SCORED,
        SETTINGS,
        evidence=found,
        pause=scored,
    )


def data_of(
    scores: dict[str, list[Score]],
    points: list[Point],
    cards: dict[str, SystemCard] | None = None,
) -> RunData:
    cards = cards or {name: CARD for name in scores}
    return RunData(
        Path("run"),
        "r",
        tuple(scores),
        cards,
        {n: reference_row_of(c) for n, c in cards.items()},
        {p.point_id: p for p in points},
        scores,
    )


def test_reference_roles_come_from_the_recorded_cards_adapter() -> None:
    assert reference_row_of(recorded("never-speak")) is ReferenceRow.NEVER_SPEAK
    assert reference_row_of(recorded("always-speak")) is ReferenceRow.ALWAYS_SPEAK
    assert reference_row_of(recorded("person", reference="own")) is ReferenceRow.PERSON
    assert reference_row_of(recorded("person", reference="shuffled")) is ReferenceRow.SHUFFLED
    assert reference_row_of(recorded("endpointer-cascade")) is None
    assert reference_row_of(recorded("not-registered-here")) is None


def test_takeover_by_duration_bins_pauses_and_hides_thin_bins() -> None:
    # Twelve short pauses (0.5 s), half taken; three long ones (3 s), all taken.
    points = [point(f"s{i}", PointKind.PAUSE, f"c{i}", 1.0, 1.5) for i in range(12)]
    points += [point(f"l{i}", PointKind.PAUSE, f"c{i}", 1.0, 4.0) for i in range(3)]
    scores = [
        pause_rollout("sys", p, (talk(1.2, 1.4),) if i % 2 == 0 else ())
        for i, p in enumerate(points[:12])
    ]
    scores += [pause_rollout("sys", p, (talk(2.0, 2.5),)) for p in points[12:]]
    table = duration_table(data_of({"sys": scores}, points))
    assert table.columns == ("system", "< 0.8 s", "0.8-1.2 s", "1.2-1.8 s", "1.8-2.5 s", ">= 2.5 s")
    assert table.rows == (("sys", "0.50 (12)", "- (0)", "- (0)", "- (0)", "- (3)"),)


def test_boundary_shifts_rescore_from_the_stored_evidence() -> None:
    # Pause 1.0-2.0 s. Words at 2.1-2.4: after the labelled end, inside once the end moves +250 ms.
    # Words at 1.1-1.2: inside, but before a start moved +250 ms.
    p1 = point("a", PointKind.PAUSE, "c1", 1.0, 2.0)
    p2 = point("b", PointKind.PAUSE, "c2", 1.0, 2.0)
    scores = [
        pause_rollout("sys", p1, (talk(2.1, 2.4),)),
        pause_rollout("sys", p2, (talk(1.1, 1.2),)),
    ]
    assert [s.pause.outcome for s in scores if s.pause] == [
        PauseOutcome.AFTER,
        PauseOutcome.TAKEOVER,
    ]
    table = boundary_table(data_of({"sys": scores}, [p1, p2]))
    assert table.columns[1:] == ("labelled", "end -250 ms", "end +250 ms", "start +250 ms")
    assert table.rows == (("sys", 0.5, 0.5, 1.0, 0.0),)


def test_terciles_split_pauses_by_curation_score() -> None:
    points = [
        point(f"p{i}", PointKind.PAUSE, f"c{i}", 1.0, 2.0, heuristic_score=float(i))
        for i in range(9)
    ]
    # Only the top three (scores 6, 7, 8) are taken.
    scores = [
        pause_rollout("sys", p, (talk(1.2, 1.5),) if i >= 6 else ()) for i, p in enumerate(points)
    ]
    table = tercile_table(data_of({"sys": scores}, points))
    assert table.rows == (("sys", "0.00 (3)", "0.00 (3)", "1.00 (3)"),)


def test_paired_comparison_counts_the_two_by_two_on_shared_points() -> None:
    points = [point(f"p{i}", PointKind.PAUSE, f"c{i % 2}", 1.0, 2.0) for i in range(5)]
    taken, held = (talk(1.2, 1.5),), ()
    a = [pause_rollout("ep-300", p, taken if i < 3 else held) for i, p in enumerate(points)]
    b = [
        pause_rollout("ep-500", p, taken if i in (0, 3) else held) for i, p in enumerate(points[:4])
    ]
    data = data_of(
        {"ep-300": a, "ep-500": b, "never": []},
        points,
        {"ep-300": CARD, "ep-500": CARD, "never": recorded("never-speak")},
    )
    assert pairs_in_run(data) == [("ep-300", "ep-500")]
    row = paired_table([(side(data, "ep-300"), side(data, "ep-500"))], seed=0, resamples=200).rows[
        0
    ]
    # Shared: p0..p3. Both: p0. 300 only: p1, p2. 500 only: p3. Neither: none.
    assert row[:7] == ("ep-300", "ep-500", 4, 1, 2, 1, 0)
    assert str(row[7]).startswith("+0.25 [")


def recall_rollout(system: str, p: Point, said: str, judged: bool | None) -> Score:
    judges = (
        () if judged is None else (RecallVerdict("judge-x", "fake", "1", "i", judged, "", "raw"),)
    )
    recall = RecallScore(said, strict_recall(said, p.gold_answer, p.kind), judges)
    return Score(
        p.point_id,
        system,
        0,
        p.kind,
        p.conversation_id,
        ScoreStatus.SCORED,
        SETTINGS,
        recall=recall,
    )


def test_recall_by_history_and_scorer_agreement() -> None:
    kind = PointKind.FACT_RECALL
    points = [
        point(
            f"f{i}", kind, f"c{i}", 5.0, 5.0, prefix_s=float(30 * (1 + i % 2)), gold_answer="Paris"
        )
        for i in range(4)
    ]
    # f0 (30 s) right by both; f1 (60 s) right by the judge only; f2 (30 s) wrong by both;
    # f3 (60 s) right by the matcher only.
    scores = [
        recall_rollout("sys", points[0], "It is Paris.", True),
        recall_rollout("sys", points[1], "The French capital.", True),
        recall_rollout("sys", points[2], "No idea.", False),
        recall_rollout("sys", points[3], "Paris, I think not.", False),
    ]
    data = data_of({"sys": scores}, points)
    history = history_table(data)
    assert history.columns == ("system", "kind", "scorer", "30 s", "60 s")
    assert ("sys", "fact recall", "strict", "0.50 (2)", "0.50 (2)") in history.rows
    assert ("sys", "fact recall", "judge-x", "0.50 (2)", "0.50 (2)") in history.rows
    agreement = agreement_table(data)
    assert agreement.columns == (
        "system",
        "kind",
        "rollouts",
        "judge-x",
        "strict",
        "agree",
        "J only",
        "S only",
    )
    assert agreement.rows == (("sys", "fact recall", 4, 0.5, 0.5, 0.5, 1, 1),)


def test_exceptional_outcomes_are_counted_per_kind() -> None:
    pause_point = point("p", PointKind.PAUSE, "c")
    turn = point("t", PointKind.TURN_END, "c")
    scores = [
        Score("p", "s", 0, PointKind.PAUSE, "c", ScoreStatus.NO_AUDIO, SETTINGS),
        Score("p2", "s", 0, PointKind.PAUSE, "c", ScoreStatus.TRANSPORT_ERROR, SETTINGS),
        Score(
            "t",
            "s",
            0,
            PointKind.TURN_END,
            "c",
            ScoreStatus.SCORED,
            SETTINGS,
            late_input=True,
            reply=ReplyScore(None, None, 0, 1.0, 3, None, None, True, ""),
        ),
        Score("t", "s", 1, PointKind.TURN_END, "c", ScoreStatus.TRANSPORT_ERROR, SETTINGS),
        Score(
            "t2",
            "s",
            0,
            PointKind.TURN_END,
            "c",
            ScoreStatus.UNTRANSCRIBED,
            SETTINGS,
            reply=ReplyScore(None, None, 0, 1.0, 3, None, None, False, ""),
        ),
    ]
    table = outcomes_table(
        data_of({"s": scores}, [pause_point, turn, point("t2", PointKind.TURN_END, "c")])
    )
    # Rollout 1's error is not rollout 0: left out, like everything else of the report. The
    # reply heard without words is counted apart from the one without any.
    assert table.rows == (("s", 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0),)
    with pytest.raises(ValueError, match="does not fit"):
        type(table)("k", "t", ("a",), (("x", "y"),))
