"""Two configurations on the points they share (the paper's endpointer comparison, appendix E).

How many pauses each took, and the difference with a paired bootstrap over conversations.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pmc.points import PointKind
from pmc.report._aggregate import RESAMPLES
from pmc.report._data import RunData
from pmc.report._pauses import takeover
from pmc.scoring import Score
from pmc.table import Cell, Table


@dataclass(frozen=True)
class Side:
    """One configuration: its label and its rollout-0 scores by point id."""

    label: str
    pauses: dict[str, Score]
    turn_ends: dict[str, Score]


def side(data: RunData, system: str, label: str | None = None) -> Side:
    """A system of a run as one side of a comparison."""
    return Side(
        label or system,
        {s.point_id: s for s in data.first(system, PointKind.PAUSE)},
        {s.point_id: s for s in data.first(system, PointKind.TURN_END)},
    )


def pairs_in_run(data: RunData) -> list[tuple[str, str]]:
    """Systems under test that share an adapter: configurations of one system."""
    under_test = [s for s in data.systems if data.references[s] is None]
    return [
        (a, b)
        for i, a in enumerate(under_test)
        for b in under_test[i + 1 :]
        if data.cards[a].adapter == data.cards[b].adapter
    ]


def _latency(score: Score) -> float | None:
    return score.reply.latency_s if score.reply is not None and score.reply.words else None


def paired_interval(
    groups: dict[str, list[float]], seed: int, resamples: int
) -> tuple[float | None, float | None]:
    """95% interval of the mean paired difference, resampling conversations."""
    names = sorted(groups)
    if not names:
        return None, None
    rng = np.random.default_rng(seed)
    means = []
    for _ in range(resamples):
        picked = rng.integers(0, len(names), len(names))
        values = [v for i in picked for v in groups[names[i]]]
        means.append(float(np.mean(values)))
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def with_interval(value: float | None, interval: tuple[float | None, float | None]) -> str:
    if value is None:
        return "-"
    low, high = interval
    if low is None or high is None:
        return f"{value:+.2f}"
    return f"{value:+.2f} [{low:+.2f}, {high:+.2f}]"


def compare(a: Side, b: Side, seed: int, resamples: int = RESAMPLES) -> tuple[Cell, ...]:
    """One row of the comparison of ``a`` with ``b``.

    The 2x2 of takeovers on shared pauses, the takeover-rate difference (A - B), and the paired
    difference of turn-end latency on shared turn ends with words in both.
    """
    shared = sorted(set(a.pauses) & set(b.pauses))
    both = only_a = only_b = 0
    diffs: dict[str, list[float]] = {}
    for pid in shared:
        ta, tb = takeover(a.pauses[pid]), takeover(b.pauses[pid])
        both += ta and tb
        only_a += ta and not tb
        only_b += tb and not ta
        diffs.setdefault(a.pauses[pid].conversation_id, []).append(float(ta) - float(tb))
    rate_diff = (only_a - only_b) / len(shared) if shared else None
    lat: dict[str, list[float]] = {}
    for pid in sorted(set(a.turn_ends) & set(b.turn_ends)):
        la, lb = _latency(a.turn_ends[pid]), _latency(b.turn_ends[pid])
        if la is not None and lb is not None:
            lat.setdefault(a.turn_ends[pid].conversation_id, []).append(la - lb)
    flat = [v for vs in lat.values() for v in vs]
    lat_diff = float(np.mean(flat)) if flat else None
    return (
        a.label,
        b.label,
        len(shared),
        both,
        only_a,
        only_b,
        len(shared) - both - only_a - only_b,
        with_interval(rate_diff, paired_interval(diffs, seed, resamples)),
        len(flat),
        with_interval(lat_diff, paired_interval(lat, seed, resamples)),
    )


def paired_table(pairs: Sequence[tuple[Side, Side]], seed: int, resamples: int) -> Table:
    """Every pair compared on the points both were scored on."""
    return Table(
        "paired_comparison",
        "Paired comparison of configurations on shared points (paper appendix E, endpointer)",
        (
            "A",
            "B",
            "shared pauses",
            "takeover both",
            "A only",
            "B only",
            "neither",
            "takeover rate A - B [95% CI]",
            "shared turn ends with words",
            "mean latency A - B, s [95% CI]",
        ),
        tuple(compare(a, b, seed, resamples) for a, b in pairs),
        "Rollout 0 of each shared point; intervals from resampling conversations "
        f"({resamples} resamples). A positive latency difference: A answers later.",
    )
