"""Pause-point analyses: takeover by pause length, boundaries and curation score.

Paper Figure 7, Table 11 and Table 13.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from pmc.points import Point, PointKind
from pmc.report._data import RunData
from pmc.scoring import PauseOutcome, Score, pause_score
from pmc.table import Cell, Table

DURATION_EDGES_S = (0.8, 1.2, 1.8, 2.5)
"""Bin edges of labelled pause duration. 0.8 and 2.5 s are the paper's own reading points
(appendix E: 5% of pauses under 0.8 s, 69% over 2.5 s); 1.2 and 1.8 s split the middle."""

MIN_BIN = 10
"""A bin's rate is shown only over at least ten rollouts (paper Figure 7)."""

SHIFT_S = 0.25
"""Boundary perturbation: the pause end moved by +-250 ms, the start by +250 ms (Table 11)."""


def takeover(score: Score) -> bool:
    """Whether the system took the floor in the pause (no audio: it did not)."""
    return score.pause is not None and score.pause.outcome is PauseOutcome.TAKEOVER


def _rate(flags: Sequence[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


def duration_bins() -> list[tuple[float, float]]:
    """The bins, as [low, high) seconds; the last runs to infinity."""
    edges = (0.0, *DURATION_EDGES_S, float("inf"))
    return list(itertools.pairwise(edges))


def bin_label(low: float, high: float) -> str:
    """``0.8-1.2 s``, ``< 0.8 s`` or ``>= 2.5 s``."""
    if low == 0.0:
        return f"< {high:g} s"
    if high == float("inf"):
        return f">= {low:g} s"
    return f"{low:g}-{high:g} s"


def pause_length_s(point: Point) -> float:
    """The labelled pause's duration."""
    return point.boundary_end_stream_s - point.boundary_stream_s


def takeover_by_duration(data: RunData) -> dict[str, list[tuple[float | None, int]]]:
    """Per system, each bin's takeover rate (None under ``MIN_BIN`` rollouts) and count."""
    out = {}
    for system in data.systems:
        scores = data.first(system, PointKind.PAUSE)
        if not scores:
            continue
        cells = []
        for low, high in duration_bins():
            flags = [
                takeover(s) for s in scores if low <= pause_length_s(data.points[s.point_id]) < high
            ]
            cells.append((_rate(flags) if len(flags) >= MIN_BIN else None, len(flags)))
        out[system] = cells
    return out


def duration_table(data: RunData) -> Table:
    """Figure 7's values as a table."""
    bins = duration_bins()
    rows = tuple(
        (data.label(system), *(_rate_and_n(rate, n) for rate, n in cells))
        for system, cells in takeover_by_duration(data).items()
    )
    return Table(
        "takeover_by_pause_duration",
        "Takeover rate by labelled pause duration (paper Figure 7)",
        ("system", *(bin_label(lo, hi) for lo, hi in bins)),
        rows,
        f"Rate (rollouts in the bin); a bin under {MIN_BIN} rollouts shows no rate.",
    )


def _rate_and_n(rate: float | None, n: int) -> str:
    return f"- ({n})" if rate is None else f"{rate:.2f} ({n})"


SHIFTS: tuple[tuple[str, float, float], ...] = (
    ("labelled", 0.0, 0.0),
    ("end -250 ms", 0.0, -SHIFT_S),
    ("end +250 ms", 0.0, SHIFT_S),
    ("start +250 ms", SHIFT_S, 0.0),
)
"""Each column of Table 11: its name, and how far the start and the end move."""


def boundary_table(data: RunData) -> Table:
    """Takeover rates rescored from the stored evidence with the pause moved (Table 11)."""
    rows: list[tuple[Cell, ...]] = []
    for system in data.systems:
        scores = data.first(system, PointKind.PAUSE)
        if not scores:
            continue
        cells: list[Cell] = [data.label(system)]
        for _, start_shift, end_shift in SHIFTS:
            cells.append(
                _rate(
                    [_shifted(s, data.points[s.point_id], start_shift, end_shift) for s in scores]
                )
            )
        rows.append(tuple(cells))
    return Table(
        "boundary_sensitivity",
        "Takeover rate under boundary perturbation (paper Table 11)",
        ("system", *(name for name, _, _ in SHIFTS)),
        tuple(rows),
        "Rescored from each rollout's stored speech intervals and words; nothing is "
        "re-transcribed.",
    )


def _shifted(score: Score, point: Point, start_shift: float, end_shift: float) -> bool:
    if score.pause is None:
        return False
    start = point.boundary_stream_s + start_shift
    end = max(start, point.boundary_end_stream_s + end_shift)
    return pause_score(score.evidence, start, end).outcome is PauseOutcome.TAKEOVER


def terciles(data: RunData) -> tuple[float, float] | None:
    """The cut points of the pause points' curation scores into thirds."""
    values = [p.heuristic_score for p in data.points.values() if p.kind is PointKind.PAUSE]
    if len(values) < 3:
        return None
    low, high = np.percentile(values, [100 / 3, 200 / 3])
    return float(low), float(high)


def _third(value: float, cuts: tuple[float, float]) -> int:
    return 0 if value < cuts[0] else 1 if value < cuts[1] else 2


def tercile_table(data: RunData) -> Table:
    """Takeover by tercile of the heuristic curation score that ranked the pauses (Table 13)."""
    cuts = terciles(data)
    names = ("lowest third", "middle third", "highest third")
    rows: list[tuple[Cell, ...]] = []
    if cuts is not None:
        for system in data.systems:
            scores = data.first(system, PointKind.PAUSE)
            if not scores:
                continue
            groups: list[list[bool]] = [[], [], []]
            for s in scores:
                groups[_third(data.points[s.point_id].heuristic_score, cuts)].append(takeover(s))
            rows.append((data.label(system), *(_rate_and_n(_rate(g), len(g)) for g in groups)))
    return Table(
        "takeover_by_curation_tercile",
        "Takeover rate by tercile of the curation score (paper Table 13)",
        ("system", *names),
        tuple(rows),
        "Rate (rollouts); thirds of the pause points by their heuristic curation score.",
    )
