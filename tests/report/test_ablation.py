"""The context-ablation table on two runs built here: every number is counted by hand."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pmc.harness import HistorySource
from pmc.points import Point, PointKind
from pmc.report import RunData
from pmc.report._twin import Differs, Twin, twin_of, twin_table, write_twin_figure
from pmc.scoring import Evidence, RecallScore, ReplyScore, Score, ScoreStatus
from pmc.scoring._text import strict_recall
from tests.report.test_analyses import SETTINGS, data_of, pause_rollout, point, talk

CONVERSATIONS = ("c0", "c1", "c2", "c3")


def _points() -> list[Point]:
    out = []
    for conv in CONVERSATIONS:
        out.append(point(f"{conv}-p", PointKind.PAUSE, conv, 1.0, 2.0))
        out.append(point(f"{conv}-t", PointKind.TURN_END, conv, 1.0, 1.0))
        out.append(
            point(
                f"{conv}-r",
                PointKind.FACT_RECALL,
                conv,
                1.0,
                1.0,
                gold_answer="Biscuit",
                prefix_s=120.0,
            )
        )
    return out


def _rollout(system: str, p: Point, **scored: Any) -> Score:
    return Score(
        p.point_id, system, 0, p.kind, p.conversation_id, ScoreStatus.SCORED, SETTINGS, **scored
    )


def _turn_end(system: str, p: Point, latency_s: float) -> Score:
    reply = ReplyScore(latency_s, 1.0, 3, 2.0, 4, 0.5, 0.75, False, "yes yes yes", cosine=0.5)
    return _rollout(system, p, reply=reply)


def _recall(system: str, p: Point, said: str) -> Score:
    verdict = strict_recall(said, p.gold_answer or "", p.kind)
    return _rollout(system, p, recall=RecallScore(said, verdict))


def _run(history: HistorySource, *, forgets: bool) -> RunData:
    """Two systems, the first of which uses its history and the second does not.

    ``cascade`` answers recall from its history and, without one, holds at two more pauses and
    answers 0.2 s later; ``steady`` does the same whatever it is given.
    """
    points = _points()
    scores: dict[str, list[Score]] = {"cascade": [], "steady": []}
    for i, conv in enumerate(CONVERSATIONS):
        pause, end, recall = (p for p in points if p.conversation_id == conv)
        took: tuple[Evidence, ...] = (talk(1.2, 1.8),)
        cascade_takes = i < 3 if not forgets else i < 1  # 3 of 4 taken; ablated: 1 of 4
        scores["cascade"].append(pause_rollout("cascade", pause, took if cascade_takes else ()))
        scores["steady"].append(pause_rollout("steady", pause, took if i < 2 else ()))
        scores["cascade"].append(_turn_end("cascade", end, 0.5 + (0.2 if forgets else 0.0)))
        scores["steady"].append(_turn_end("steady", end, 0.7))
        scores["cascade"].append(
            _recall("cascade", recall, "I don't know" if forgets else "It was Biscuit")
        )
        scores["steady"].append(_recall("steady", recall, "I don't know"))
    return replace(data_of(scores, points), history=history, run_id=f"run-{history.value}")


def test_the_table_pairs_each_measure_and_names_what_did_not_change() -> None:
    full, none = _run(HistorySource.FULL, forgets=False), _run(HistorySource.NONE, forgets=True)
    # Either order of --compare gives the full run as the base.
    twin = Twin(Differs.HISTORY, full, none)
    assert twin_of(none, full) == twin and twin_of(full, none) == twin
    assert twin_of(full, full) is None
    table = twin_table(twin, seed=0, resamples=200)
    rows = {(r[0], r[1]): r for r in table.rows}
    hold = rows[("cascade", "hold rate at pauses")]
    # Held at 1 of 4 pauses with the history, 3 of 4 without: +0.50.
    assert hold[2:5] == (4, "0.25", "0.75")
    assert str(hold[5]).startswith("+0.50 [")
    assert hold[6:] == ("2 of 4", "changed")
    latency = rows[("cascade", "turn-end latency, s")]
    assert latency[3:5] == ("0.50", "0.70") and latency[5] == "+0.20 [+0.20, +0.20]"
    recall = rows[("cascade", "fact recall (strict)")]
    assert recall[3:5] == ("1.00", "0.00") and recall[6] == "4 of 4"
    for measure in ("hold rate at pauses", "turn-end latency, s", "fact recall (strict)"):
        steady = rows[("steady", measure)]
        assert steady[5] == "+0.00 [+0.00, +0.00]" and steady[6] == "0 of 4", steady
        assert steady[7] == "no change: does not use the history"
    assert table.title.startswith(
        "Context ablation: history none (run-none) against full (run-full)"
    )


def test_a_difference_below_what_the_report_prints_is_no_change() -> None:
    full = _run(HistorySource.FULL, forgets=False)
    nudged = {
        name: [
            replace(s, reply=replace(s.reply, latency_s=s.reply.latency_s + 0.004))
            if s.reply is not None and s.reply.latency_s is not None
            else s
            for s in scores
        ]
        for name, scores in full.scores.items()
    }
    twin = replace(full, scores=nudged, history=HistorySource.SHUFFLED)
    table = twin_table(Twin(Differs.HISTORY, full, twin), seed=0, resamples=50)
    assert {r[7] for r in table.rows} == {"no change: does not use the history"}


def test_the_figure_is_drawn(tmp_path: Path) -> None:
    full, none = _run(HistorySource.FULL, forgets=False), _run(HistorySource.NONE, forgets=True)
    figure = write_twin_figure(tmp_path, Twin(Differs.HISTORY, full, none), seed=0, resamples=50)
    assert figure is not None
    assert (tmp_path / figure.file).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("mode", [HistorySource.NONE, HistorySource.SHUFFLED])
def test_runs_with_the_same_history_are_not_an_ablation(mode: HistorySource) -> None:
    a = _run(mode, forgets=True)
    assert twin_of(a, a) is None
