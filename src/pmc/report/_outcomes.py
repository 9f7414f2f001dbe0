"""Exceptional outcomes per system (paper Table 15); turn-end distributions (Figure 8)."""

from __future__ import annotations

import numpy as np

from pmc.points import PointKind
from pmc.report._data import RunData
from pmc.report._recall import RECALL_KINDS
from pmc.scoring import Score, ScoreStatus
from pmc.table import Cell, Table

QUANTILES = (10, 25, 50, 75, 90)
"""Percentiles shown of each turn-end distribution."""


def _count(scores: list[Score], status: ScoreStatus) -> int:
    return sum(s.status is status for s in scores)


def outcomes_table(data: RunData) -> Table:
    """Every outcome that is not a plain score, per system and point kind."""
    rows: list[tuple[Cell, ...]] = []
    for system in data.systems:
        first = [s for s in data.scores[system] if s.rollout == 0]
        if not first:
            continue
        pause = [s for s in first if s.kind is PointKind.PAUSE]
        turn = [s for s in first if s.kind is PointKind.TURN_END]
        recall = [s for s in first if s.kind in RECALL_KINDS]
        scored_turns = [s for s in turn if s.status is not ScoreStatus.TRANSPORT_ERROR]
        rows.append(
            (
                data.label(system),
                _count(pause, ScoreStatus.NO_AUDIO),
                _count(pause, ScoreStatus.TRANSPORT_ERROR),
                sum(bool(s.reply and s.reply.censored) for s in turn),
                sum(
                    not (s.reply and s.reply.words) and s.status is not ScoreStatus.UNTRANSCRIBED
                    for s in scored_turns
                ),
                _count(turn, ScoreStatus.UNTRANSCRIBED),
                _count(turn, ScoreStatus.TRANSPORT_ERROR),
                _count(recall, ScoreStatus.NO_AUDIO),
                _count(recall, ScoreStatus.UNTRANSCRIBED),
                _count(recall, ScoreStatus.TRANSPORT_ERROR),
                sum(s.late_input for s in first),
                sum(bool(s.pause and s.pause.wordless) for s in pause),
            )
        )
    return Table(
        "exceptional_outcomes",
        "Exceptional outcomes per system (paper Table 15)",
        (
            "system",
            "pause: no audio",
            "pause: errors",
            "turn end: censored",
            "turn end: no words",
            "turn end: heard, no words",
            "turn end: errors",
            "recall: no audio",
            "recall: heard, no words",
            "recall: errors",
            "late input",
            "pause: wordless",
        ),
        tuple(rows),
        "Rollout 0 of each point. Only errors (transport failures, retried on resume) are left "
        "out of the scores. Censored: still speaking at the 30 s cap, on the played track. Late "
        "input: the streamer ran later than its bound; such rollouts are kept and marked. "
        "Heard, no words: the gate found speech after the boundary and the recogniser no words "
        "in it; counted as no reply in the rates.",
    )


def turn_values(data: RunData, system: str, field: str) -> list[float]:
    """A turn-end metric over the system's rollouts with words."""
    values = []
    for s in data.first(system, PointKind.TURN_END):
        if s.reply is not None and s.reply.words:
            value = getattr(s.reply, field)
            if value is not None:
                values.append(float(value))
    return values


def distribution_table(data: RunData) -> Table:
    """Percentiles of turn-end latency and duration ratio (Figure 8's curves, as numbers)."""
    rows: list[tuple[Cell, ...]] = []
    for system in data.systems:
        turns = data.first(system, PointKind.TURN_END)
        if not turns:
            continue
        for field, name in (("latency_s", "latency, s"), ("duration_ratio", "duration ratio")):
            values = turn_values(data, system, field)
            cells: list[Cell] = [data.label(system), name, len(values), len(turns)]
            if values:
                cells += [float(v) for v in np.percentile(values, QUANTILES)]
            else:
                cells += [None] * len(QUANTILES)
            rows.append(tuple(cells))
    return Table(
        "turn_end_distributions",
        "Turn-end latency and duration ratio, percentiles over rollouts with words "
        "(paper Figure 8)",
        ("system", "metric", "with words", "rollouts", *(f"p{q}" for q in QUANTILES)),
        tuple(rows),
        "A latency at or below zero is a reply whose first word began before the turn end.",
    )
