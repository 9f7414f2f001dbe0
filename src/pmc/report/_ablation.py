"""The context ablation: what changes when a run's history is removed or swapped.

A run and its ablated twin (``pmc run --history none|shuffled``, the same points) are paired
point by point: each system's hold rate at pauses, turn-end latency, duration ratio, similarity
and recall, the difference with a paired bootstrap interval over conversations, and whether the
system's behaviour changed at all (docs/architecture.md "Context ablation").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pmc.harness import HistorySource
from pmc.points import PointKind
from pmc.report._aggregate import RESAMPLES, reply_field, strict_correct
from pmc.report._compare import paired_interval, with_interval
from pmc.report._data import RunData
from pmc.report._figures import DPI, FIGURES_DIR
from pmc.report._pauses import takeover
from pmc.scoring import Score
from pmc.table import Figure, Table, new_plot, write_png

SAME_WITHIN = 0.005
"""Two values closer than this count as unchanged: they print the same at the report's two
decimals (a rate's difference at one point is 0 or 1, so rates must match exactly)."""


@dataclass(frozen=True)
class Measure:
    """One behaviour compared between the runs, at one kind of point."""

    key: str
    label: str
    kind: PointKind
    value: Callable[[Score], float | None]


def _hold(s: Score) -> float:
    return 0.0 if takeover(s) else 1.0


def _recalled(s: Score) -> float:
    return float(bool(strict_correct(s)))


MEASURES = (
    Measure("hold", "hold rate at pauses", PointKind.PAUSE, _hold),
    Measure("latency_s", "turn-end latency, s", PointKind.TURN_END, reply_field("latency_s")),
    Measure("duration_ratio", "duration ratio", PointKind.TURN_END, reply_field("duration_ratio")),
    Measure("cosine", "similarity (cosine)", PointKind.TURN_END, reply_field("cosine")),
    Measure("fact_recall", "fact recall (strict)", PointKind.FACT_RECALL, _recalled),
    Measure(
        "conversation_recall",
        "conversation recall (strict)",
        PointKind.CONVERSATION_RECALL,
        _recalled,
    ),
)


@dataclass(frozen=True)
class Paired:
    """One system's measure on the points scored in both runs."""

    system: str
    measure: Measure
    base: list[float]
    ablated: list[float]
    by_conversation: dict[str, list[float]]
    """Each conversation's differences (ablated minus base), for the bootstrap."""

    @property
    def changed(self) -> int:
        """Points where the two runs differ by more than :data:`SAME_WITHIN`."""
        return sum(abs(a - b) >= SAME_WITHIN for a, b in zip(self.ablated, self.base, strict=True))


def paired(base: RunData, ablated: RunData, system: str, measure: Measure) -> Paired:
    """A system's measure at the points both runs scored (rollout 0, failures left out)."""
    theirs = {s.point_id: s for s in ablated.first(system, measure.kind)}
    out = Paired(system, measure, [], [], {})
    for s in base.first(system, measure.kind):
        other = theirs.get(s.point_id)
        if other is None:
            continue
        b, a = measure.value(s), measure.value(other)
        if a is None or b is None:
            continue
        out.base.append(b)
        out.ablated.append(a)
        out.by_conversation.setdefault(s.conversation_id, []).append(a - b)
    return out


def sides(data: RunData, other: RunData) -> tuple[RunData, RunData] | None:
    """The base run and its ablated twin, where the two runs' histories differ."""
    if data.history is other.history:
        return None
    if other.history is HistorySource.FULL:
        return other, data
    return data, other


def ablation_pairs(base: RunData, ablated: RunData) -> list[Paired]:
    """Every system in both runs, every measure it has paired points of."""
    out = []
    for system in base.systems:
        if system not in ablated.scores:
            continue
        for measure in MEASURES:
            found = paired(base, ablated, system, measure)
            if found.base:
                out.append(found)
    return out


def unchanged(pairs: list[Paired], system: str) -> bool:
    """Whether the system did the same at every paired point of every measure."""
    mine = [p for p in pairs if p.system == system]
    return bool(mine) and all(p.changed == 0 for p in mine)


def _mean(values: list[float]) -> str:
    return f"{float(np.mean(values)):.2f}"


def ablation_table(base: RunData, ablated: RunData, seed: int, resamples: int = RESAMPLES) -> Table:
    """The ablation, one row per system and measure."""
    pairs = ablation_pairs(base, ablated)
    rows = []
    for p in pairs:
        diffs = [a - b for a, b in zip(p.ablated, p.base, strict=True)]
        verdict = "no change: does not use the history" if unchanged(pairs, p.system) else "changed"
        rows.append(
            (
                base.label(p.system),
                p.measure.label,
                len(p.base),
                _mean(p.base),
                _mean(p.ablated),
                with_interval(
                    float(np.mean(diffs)), paired_interval(p.by_conversation, seed, resamples)
                ),
                f"{p.changed} of {len(p.base)}",
                verdict,
            )
        )
    return Table(
        "context_ablation",
        f"Context ablation: history {ablated.history.value} ({ablated.run_id}) against "
        f"{base.history.value} ({base.run_id}), paired over points",
        (
            "system",
            "measure",
            "paired points",
            f"history {base.history.value}",
            f"history {ablated.history.value}",
            "difference [95% CI]",
            "points changed",
            "behaviour",
        ),
        tuple(rows),
        "Rollout 0 of each point scored in both runs (latency, duration and similarity where "
        "both replies had words); the difference is the ablated run's minus the base run's, "
        f"with an interval from resampling conversations ({resamples} resamples). A point "
        f"changed where the two values differ by {SAME_WITHIN} or more; a system that changed "
        "at no point of any measure does not use the history it was given.",
    )


def write_ablation_figure(
    folder: Path, base: RunData, ablated: RunData, seed: int, resamples: int = RESAMPLES
) -> Figure | None:
    """Each system's difference per measure with its interval, a panel per measure."""
    pairs = ablation_pairs(base, ablated)
    measures = [m for m in MEASURES if any(p.measure is m for p in pairs)]
    if not measures:
        return None
    systems = [s for s in base.systems if any(p.system == s for p in pairs)]
    plot = new_plot(figsize=(3.2 * len(measures), 0.5 * len(systems) + 1.6))
    axes = plot.subplots(1, len(measures), sharey=True, squeeze=False)[0]
    for ax, measure in zip(axes, measures, strict=True):
        for y, system in enumerate(systems):
            found = [p for p in pairs if p.system == system and p.measure is measure]
            if not found:
                continue
            p = found[0]
            diff = float(np.mean([a - b for a, b in zip(p.ablated, p.base, strict=True)]))
            low, high = paired_interval(p.by_conversation, seed, resamples)
            color = "0.6" if unchanged(pairs, system) else f"C{y % 10}"
            if low is not None and high is not None:
                ax.hlines(y, low, high, color=color)
            ax.plot([diff], [y], "o", color=color)
        ax.axvline(0.0, color="0.3", linewidth=0.8)
        ax.set_title(measure.label, fontsize=9)
        ax.set_yticks(range(len(systems)))
        ax.set_yticklabels(
            [f"{s} (no change)" if unchanged(pairs, s) else s for s in systems], fontsize=8
        )
        ax.invert_yaxis()
    title = (
        f"Context ablation: history {ablated.history.value} minus {base.history.value}, "
        "paired over points"
    )
    plot.suptitle(title)
    plot.tight_layout()
    relative = f"{FIGURES_DIR}/context_ablation.png"
    write_png(plot, folder / relative, dpi=DPI)
    return Figure("context_ablation", title, relative)
