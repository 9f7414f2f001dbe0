"""The label inventory (paper appendix B): Table 5's counts and rates, Figure 6's distributions."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pmc.labels._types import Flag, LabelKind, Labels
from pmc.table import Align, Cell, Table, new_plot, write_png

INVENTORY_KINDS = (
    LabelKind.TURN,
    LabelKind.PAUSE,
    LabelKind.BACKCHANNEL,
    LabelKind.FAILED_TAKE,
    LabelKind.OVERLAP,
    LabelKind.END_OF_TURN,
    LabelKind.BARGE_IN,
    LabelKind.REPLY_BACKCHANNEL,
)
"""The label kinds in the order of the paper's Table 5, then rule 5's (ours)."""

INSTANT_KINDS = frozenset({LabelKind.END_OF_TURN})
"""Kinds that mark an instant, so have no duration."""

FIGURE_BINS = 40
"""Histogram bins per panel of the inventory figure."""


@dataclass(frozen=True)
class KindStats:
    """One label kind over a set of conversations.

    Attributes:
        kind: The label kind.
        count: How many labels of this kind.
        per_min: Count per minute of all conversations together (0 when there are no minutes).
        median_s: Median duration in seconds; None for instants or when there are none.
    """

    kind: LabelKind
    count: int
    per_min: float
    median_s: float | None

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {"count": self.count, "per_min": self.per_min, "median_s": self.median_s}


@dataclass(frozen=True)
class Inventory:
    """What the labels of a set of conversations hold (paper Table 5).

    Attributes:
        conversations: How many conversations.
        total_min: Their total duration in minutes.
        kinds: Per-kind statistics, in the order of :data:`INVENTORY_KINDS`.
        flagged_turns: Turns with at least one flag.
        flagged_turn_share: Flagged turns over all turns (0 when there are no turns).
        flag_counts: How many labels of any kind carry each flag, for every flag.
        gap_fill_words: Words of turns that came from gap-fill ASR.
        median_turns_per_min: Median over conversations of each one's turns per minute.
        median_backchannels_per_min: The same for backchannels.
        median_overlaps_per_min: The same for overlaps.
        median_floor_transfer_s: Median floor-transfer offset over all changes of speaker.
        median_barge_in_offset_s: Median time from a reply's start to a barge-in over it.
        median_yield_s: Median time from a barge-in to the end of the replier's speech.
        median_kept_talking_s: Median time a replier went on after a backchannel.
    """

    conversations: int
    total_min: float
    kinds: tuple[KindStats, ...]
    flagged_turns: int
    flagged_turn_share: float
    flag_counts: dict[Flag, int]
    gap_fill_words: int
    median_turns_per_min: float | None
    median_backchannels_per_min: float | None
    median_overlaps_per_min: float | None
    median_floor_transfer_s: float | None
    median_barge_in_offset_s: float | None = None
    median_yield_s: float | None = None
    median_kept_talking_s: float | None = None

    def of(self, kind: LabelKind) -> KindStats:
        """The statistics of one label kind."""
        return next(k for k in self.kinds if k.kind is kind)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form; flags are keyed by name, as in the labels' own JSON."""
        return {
            "conversations": self.conversations,
            "total_min": self.total_min,
            "kinds": {k.kind.value: k.to_dict() for k in self.kinds},
            "flagged_turns": self.flagged_turns,
            "flagged_turn_share": self.flagged_turn_share,
            "flag_counts": {f.name: n for f, n in self.flag_counts.items()},
            "gap_fill_words": self.gap_fill_words,
            "median_turns_per_min": self.median_turns_per_min,
            "median_backchannels_per_min": self.median_backchannels_per_min,
            "median_overlaps_per_min": self.median_overlaps_per_min,
            "median_floor_transfer_s": self.median_floor_transfer_s,
            "median_barge_in_offset_s": self.median_barge_in_offset_s,
            "median_yield_s": self.median_yield_s,
            "median_kept_talking_s": self.median_kept_talking_s,
        }


def _median(values: Sequence[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def _durations(labels: Sequence[Labels], kind: LabelKind) -> list[float]:
    return [x.duration_s for c in labels for x in c.of(kind)]


def _floor_transfers(labels: Sequence[Labels]) -> list[float]:
    return [
        x.floor_transfer_s
        for c in labels
        for x in c.of(LabelKind.END_OF_TURN)
        if x.floor_transfer_s is not None
    ]


def _measure(labels: Sequence[Labels], kind: LabelKind, name: str) -> list[float]:
    """One talk-over measure (``yield_s``...) of every label of ``kind`` that has it."""
    values = (getattr(x, name) for c in labels for x in c.of(kind))
    return [v for v in values if v is not None]


def _median_rate(labels: Sequence[Labels], kind: LabelKind) -> float | None:
    return _median([len(c.of(kind)) / (c.duration_s / 60.0) for c in labels])


def inventory(labels: Sequence[Labels]) -> Inventory:
    """Count, time and summarise the labels of a set of conversations.

    Raises:
        ValueError: If a conversation's duration is not positive.
    """
    bad = [c.conversation_id for c in labels if c.duration_s <= 0]
    if bad:
        raise ValueError(f"conversations without a positive duration: {', '.join(bad)}")
    total_min = sum(c.duration_s for c in labels) / 60.0
    kinds = []
    for kind in INVENTORY_KINDS:
        durations = _durations(labels, kind)
        kinds.append(
            KindStats(
                kind=kind,
                count=len(durations),
                per_min=len(durations) / total_min if total_min > 0 else 0.0,
                median_s=None if kind in INSTANT_KINDS else _median(durations),
            )
        )
    turns = [x for c in labels for x in c.of(LabelKind.TURN)]
    flagged = sum(bool(t.flags) for t in turns)
    every_label = [x for c in labels for x in c.labels]
    return Inventory(
        conversations=len(labels),
        total_min=total_min,
        kinds=tuple(kinds),
        flagged_turns=flagged,
        flagged_turn_share=flagged / len(turns) if turns else 0.0,
        flag_counts={f: sum(f in x.flags for x in every_label) for f in Flag},
        gap_fill_words=sum(t.gap_fill_words for t in turns),
        median_turns_per_min=_median_rate(labels, LabelKind.TURN),
        median_backchannels_per_min=_median_rate(labels, LabelKind.BACKCHANNEL),
        median_overlaps_per_min=_median_rate(labels, LabelKind.OVERLAP),
        median_floor_transfer_s=_median(_floor_transfers(labels)),
        median_barge_in_offset_s=_median(_measure(labels, LabelKind.BARGE_IN, "reply_offset_s")),
        median_yield_s=_median(_measure(labels, LabelKind.BARGE_IN, "yield_s")),
        median_kept_talking_s=_median(
            _measure(labels, LabelKind.REPLY_BACKCHANNEL, "kept_talking_s")
        ),
    )


def _fmt(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _tables(inv: Inventory) -> tuple[Table, Table]:
    """Table 5 as two tables: one row per label kind, then the inventory's other quantities."""
    kinds = Table(
        "inventory_kinds",
        "Labels per kind (paper Table 5)",
        ("label", "count", "per minute", "median duration (s)"),
        tuple((k.kind.value, k.count, _fmt(k.per_min), _fmt(k.median_s)) for k in inv.kinds),
    )
    summary: tuple[tuple[Cell, ...], ...] = (
        ("conversations", inv.conversations),
        ("minutes", _fmt(inv.total_min, 1)),
        ("flagged turns", f"{inv.flagged_turns} ({inv.flagged_turn_share:.1%})"),
        *((f"flag: {f.value}", n) for f, n in inv.flag_counts.items()),
        ("gap-fill words", inv.gap_fill_words),
        ("median turns per minute", _fmt(inv.median_turns_per_min)),
        ("median backchannels per minute", _fmt(inv.median_backchannels_per_min)),
        ("median overlaps per minute", _fmt(inv.median_overlaps_per_min)),
        ("median floor-transfer offset (s)", _fmt(inv.median_floor_transfer_s)),
        ("median barge-in, from the reply's start (s)", _fmt(inv.median_barge_in_offset_s)),
        ("median yield after a barge-in (s)", _fmt(inv.median_yield_s)),
        ("median talk after a backchannel in a reply (s)", _fmt(inv.median_kept_talking_s)),
    )
    quantities = Table(
        "inventory_quantities", "The labels in numbers", ("quantity", "value"), summary
    )
    return kinds, quantities


def inventory_markdown(inv: Inventory) -> str:
    """Two Markdown tables: one row per label kind, then the inventory's other quantities."""
    kinds, quantities = _tables(inv)
    numbers = (Align.RIGHT,) * 3
    return (
        kinds.markdown(heading=False, align=(Align.DEFAULT, *numbers))
        + "\n"
        + quantities.markdown(heading=False, align=(Align.DEFAULT, Align.RIGHT))
    )


def _flatten(data: dict[str, Any], prefix: str = "") -> tuple[tuple[Cell, ...], ...]:
    rows: tuple[tuple[Cell, ...], ...] = ()
    for key, value in data.items():
        if isinstance(value, dict):
            rows += _flatten(value, f"{prefix}{key}.")
        else:
            rows += ((f"{prefix}{key}", value),)
    return rows


def inventory_csv(inv: Inventory) -> str:
    """CSV with one ``quantity,value`` row per number of :meth:`Inventory.to_dict` (dotted keys)."""
    return Table("inventory", "The inventory", ("quantity", "value"), _flatten(inv.to_dict())).csv()


def inventory_figure(labels: Sequence[Labels], path: Path) -> None:
    """Write Figure 6 as a PNG: turn, pause and backchannel durations, floor-transfer offsets.

    Panels (a) to (c) are histograms on a log axis (labels of zero length cannot be shown there
    and are left out of them); panel (d) is linear with a line at zero. The file's bytes depend
    only on the labels: no software version or date is written into it.
    """
    import numpy as np
    from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

    fig = new_plot(figsize=(10.0, 7.0), dpi=100, layout="constrained")
    axes = fig.subplots(2, 2).flatten()
    panels = [
        ("(a) turn duration", _durations(labels, LabelKind.TURN), True),
        ("(b) within-turn pause duration", _durations(labels, LabelKind.PAUSE), True),
        ("(c) backchannel duration", _durations(labels, LabelKind.BACKCHANNEL), True),
        ("(d) floor-transfer offset", _floor_transfers(labels), False),
    ]
    for ax, (title, raw, log) in zip(axes, panels, strict=True):
        values = [v for v in raw if v > 0] if log else raw
        ax.set_title(f"{title} (n = {len(values)})")
        ax.set_xlabel("offset (s)" if not log else "duration (s)")
        ax.set_ylabel("count")
        if not values:
            ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
            continue
        if log:
            low, high = min(values), max(values)
            if low == high:
                low, high = low / 2.0, high * 2.0
            ax.hist(values, bins=np.geomspace(low, high, FIGURE_BINS + 1), color="0.3")
            ax.set_xscale("log")
            # Plain seconds at 1-2-3-5 steps instead of powers of ten, which crowd or vanish
            # on ranges shorter than a decade.
            ax.xaxis.set_major_locator(LogLocator(base=10.0, subs=(1.0, 2.0, 3.0, 5.0)))
            ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
            ax.xaxis.set_minor_formatter(NullFormatter())
        else:
            ax.hist(values, bins=FIGURE_BINS, color="0.3")
            ax.axvline(0.0, color="black", linestyle="--", linewidth=1.0)
    write_png(fig, path)
