"""A run against its twin: the same points, one setting changed, paired point by point.

Two twins are compared: the context ablation, a run whose history was removed or swapped
(``pmc run --history none|shuffled``, docs/architecture.md "Context ablation"), and a run under
conditions against its clean twin (``pmc run --condition``, docs/conditions.md). Both give one
table and one figure from the same code: per system and measure, each run's mean, the
difference with a paired bootstrap interval over conversations, and how many points changed.
Two runs that differ in both settings are refused: a difference could not be put down to either.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import numpy as np

from pmc.errors import PmcError
from pmc.harness import HistorySource
from pmc.report._aggregate import RESAMPLES
from pmc.report._compare import paired_interval, with_interval
from pmc.report._data import RunData
from pmc.report._figures import DPI, FIGURES_DIR
from pmc.report._heading import condition_names, same_conditions
from pmc.report._measures import CLIP_MEASURES, MEASURES, SAME_WITHIN, Measure, Paired, paired
from pmc.table import Figure, Table, new_plot, write_png


class Differs(StrEnum):
    """The one setting a run and its twin differ in."""

    HISTORY = "history"
    """The history its systems got (the context ablation)."""
    CONDITIONS = "conditions"
    """What its systems heard the person through."""


@dataclass(frozen=True)
class Twin:
    """Two runs that differ in one setting.

    Attributes:
        differs: The setting.
        base: The run with the setting as the paper's protocol has it (the full history, a
            clean line) where one of them does; otherwise the report's own run.
        changed: The other run.
    """

    differs: Differs
    base: RunData
    changed: RunData

    @property
    def key(self) -> str:
        """The table's and the figure's key."""
        return "context_ablation" if self.differs is Differs.HISTORY else "condition_comparison"

    @property
    def measures(self) -> tuple[Measure, ...]:
        """What is compared: under conditions, the talk-over points' measures too."""
        return MEASURES if self.differs is Differs.HISTORY else MEASURES + CLIP_MEASURES

    def setting(self, data: RunData) -> str:
        """One run's side of the setting, as the table names it."""
        if self.differs is Differs.HISTORY:
            return f"history {data.history.value}"
        return condition_names(data.conditions)

    @property
    def lead(self) -> str:
        """What the table and the figure compare."""
        return "Context ablation" if self.differs is Differs.HISTORY else "Condition"

    @property
    def title(self) -> str:
        """The table's title: what each run had, and their ids."""
        base, changed = self.base, self.changed
        text = (
            f"{self.lead}: {self.setting(changed)} ({changed.run_id}) against "
            f"{self.setting(base).removeprefix('history ')} ({base.run_id}), paired over points"
        )
        if self.differs is Differs.HISTORY and base.conditions:
            text += f", both under {condition_names(base.conditions)}"
        if self.differs is Differs.CONDITIONS and base.history is not HistorySource.FULL:
            text += f", both with history {base.history.value}"
        return text

    @property
    def no_change(self) -> str:
        """The verdict on a system that changed at no point of any measure."""
        if self.differs is Differs.HISTORY:
            return "no change: does not use the history"
        return "no change: the condition made no difference"


def twin_of(data: RunData, other: RunData) -> Twin | None:
    """The two runs as twins; None where they differ in neither setting.

    Raises:
        PmcError: If they differ in both the history and the conditions.
    """
    history = data.history is not other.history
    conditions = not same_conditions(data.conditions, other.conditions)
    if history and conditions:
        raise PmcError(
            f"runs {data.run_id} and {other.run_id} differ in both their history "
            f"({data.history.value}, {other.history.value}) and their conditions "
            f"({condition_names(data.conditions)}, {condition_names(other.conditions)}): a paired "
            "difference could not say which made it; compare each with a twin that differs in "
            "one, or report them apart"
        )
    if history:
        first = other.history is HistorySource.FULL
        return Twin(Differs.HISTORY, *((other, data) if first else (data, other)))
    if conditions:
        first = not other.conditions
        return Twin(Differs.CONDITIONS, *((other, data) if first else (data, other)))
    return None


def twin_pairs(twin: Twin) -> list[Paired]:
    """Every system in both runs, every measure it has paired points of."""
    out = []
    for system in twin.base.systems:
        if system not in twin.changed.scores:
            continue
        for measure in twin.measures:
            found = paired(twin.base, twin.changed, system, measure)
            if found.base:
                out.append(found)
    return out


def unchanged(pairs: list[Paired], system: str) -> bool:
    """Whether the system did the same at every paired point of every measure."""
    mine = [p for p in pairs if p.system == system]
    return bool(mine) and all(p.changed == 0 for p in mine)


def _mean(values: list[float]) -> str:
    return f"{float(np.mean(values)):.2f}"


def twin_table(twin: Twin, seed: int, resamples: int = RESAMPLES) -> Table:
    """The comparison, one row per system and measure."""
    pairs = twin_pairs(twin)
    rows = []
    for p in pairs:
        interval = paired_interval(p.by_conversation, seed, resamples)
        rows.append(
            (
                twin.base.label(p.system),
                p.measure.label,
                len(p.base),
                _mean(p.base),
                _mean(p.ablated),
                with_interval(float(np.mean(p.differences)), interval),
                f"{p.changed} of {len(p.base)}",
                twin.no_change if unchanged(pairs, p.system) else "changed",
            )
        )
    talk_over = ""
    if twin.differs is Differs.CONDITIONS:
        talk_over = (
            "yield and stop latency at talk-over points where the system was talking when the "
            "person's clip came in both runs, stop latency where it stopped in both; "
        )
    return Table(
        twin.key,
        twin.title,
        (
            "system",
            "measure",
            "paired points",
            twin.setting(twin.base),
            twin.setting(twin.changed),
            "difference [95% CI]",
            "points changed",
            "behaviour",
        ),
        tuple(rows),
        "Rollout 0 of each point scored in both runs (latency, duration and similarity where "
        f"both replies had words; {talk_over}means over those points); the difference is the "
        f"{twin.setting(twin.changed)} run's minus the {twin.setting(twin.base)} run's, with an "
        f"interval from resampling conversations ({resamples} resamples). A point changed "
        f"where the two values differ by {SAME_WITHIN} or more; a system that changed at no "
        f'point of any measure is marked "{twin.no_change}".',
    )


def write_twin_figure(
    folder: Path, twin: Twin, seed: int, resamples: int = RESAMPLES
) -> Figure | None:
    """Each system's difference per measure with its interval, a panel per measure."""
    pairs = twin_pairs(twin)
    measures = [m for m in twin.measures if any(p.measure is m for p in pairs)]
    if not measures:
        return None
    systems = [s for s in twin.base.systems if any(p.system == s for p in pairs)]
    plot = new_plot(figsize=(3.2 * len(measures), 0.5 * len(systems) + 1.6))
    axes = plot.subplots(1, len(measures), sharey=True, squeeze=False)[0]
    for ax, measure in zip(axes, measures, strict=True):
        for y, system in enumerate(systems):
            found = [p for p in pairs if p.system == system and p.measure is measure]
            if not found:
                continue
            p = found[0]
            low, high = paired_interval(p.by_conversation, seed, resamples)
            color = "0.6" if unchanged(pairs, system) else f"C{y % 10}"
            if low is not None and high is not None:
                ax.hlines(y, low, high, color=color)
            ax.plot([float(np.mean(p.differences))], [y], "o", color=color)
        ax.axvline(0.0, color="0.3", linewidth=0.8)
        ax.set_title(measure.label, fontsize=9)
        ax.set_yticks(range(len(systems)))
        ax.set_yticklabels(
            [f"{s} (no change)" if unchanged(pairs, s) else s for s in systems], fontsize=8
        )
        ax.invert_yaxis()
    title = (
        f"{twin.lead}: {twin.setting(twin.changed)} minus "
        f"{twin.setting(twin.base).removeprefix('history ')}, paired over points"
    )
    plot.suptitle(title)
    plot.tight_layout()
    relative = f"{FIGURES_DIR}/{twin.key}.png"
    write_png(plot, folder / relative, dpi=DPI)
    return Figure(twin.key, title, relative)
