"""The trade-off curve beside the run: hold rate at pauses against turn-end decision latency.

The curves ``pmc curve`` swept on the run's points (``WORKDIR/curves``), each setting a point,
the bundled cards marked on it and the person beside it; and, for each of the run's systems with
a curve's adapter, where the run itself measured it: its hold rate at pauses and the median of
its endpointer's decision after the turn end (docs/architecture.md "Trade-off curves").
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pmc.curves import Curve, read_curves
from pmc.harness import Run
from pmc.points import PointKind
from pmc.report._data import RunData
from pmc.report._figures import DPI, FIGURES_DIR
from pmc.report._latency import decisions
from pmc.report._pauses import takeover
from pmc.systems import Family, SystemCard
from pmc.table import Figure, Table, new_plot, write_png


@dataclass(frozen=True)
class Measured:
    """A system of the run where the run measured it."""

    system: str
    hold_rate: float | None
    decision_latency_s: float | None


def measured(data: RunData, system: str) -> Measured:
    """Its hold rate at pauses and its median decision after the turn end, from the run."""
    pauses = data.first(system, PointKind.PAUSE)
    rate = sum(not takeover(s) for s in pauses) / len(pauses) if pauses else None
    decided = decisions(data, system, PointKind.TURN_END)
    return Measured(system, rate, float(np.median(decided)) if decided else None)


def _on_curves(data: RunData, curves: list[Curve]) -> list[Measured]:
    adapters = {c.adapter for c in curves}
    return [
        measured(data, s)
        for s in data.systems
        if data.references[s] is None
        and data.cards[s].adapter in adapters
        and _decides_turn_ends(data.cards[s])
    ]


def _decides_turn_ends(card: SystemCard) -> bool:
    """Whether the card's own endpointer decides at turn ends (not the harness's commit)."""
    return card.family is Family.LOCAL or card.endpoints_everywhere


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _card_setting(card: SystemCard) -> str:
    """A run's card's own setting on its curve: its window, Smart Turn's VAD stop, or eagerness."""
    turns = card.turn_detection
    keys = (("silence_ms", 1), ("silence_duration_ms", 1), ("silenceDurationMs", 1))
    for key, scale in (*keys, ("vad_stop_secs", 1000)):
        if key in turns:
            return f"{float(turns[key]) * scale:g} ms"
    return str(turns.get("eagerness", "-"))


def curve_table(data: RunData) -> Table | None:
    """Every swept setting, then the run's own systems of the same adapters."""
    curves = read_curves(Run(data.run_dir).workdir)
    if not curves:
        return None
    rows: list[tuple[str | int | float | None, ...]] = []
    for curve in curves:
        for s in curve.settings:
            rows.append(
                (
                    f"{curve.card} swept",
                    s.label,
                    "-" if s.threshold is None else f"{s.threshold:g}",
                    _rounded(s.hold_rate),
                    _rounded(s.decision_latency_s),
                    " ".join(s.cards),
                )
            )
    for m in _on_curves(data, curves):
        card = data.cards[m.system]
        rows.append(
            (
                f"{m.system} (this run)",
                _card_setting(card),
                f"{card.turn_detection.get('threshold', '-')}",
                _rounded(m.hold_rate),
                _rounded(m.decision_latency_s),
                "",
            )
        )
    return Table(
        "tradeoff_curve",
        "Trade-off curve: hold rate at pauses against turn-end decision latency",
        ("", "setting", "threshold", "hold rate", "decision latency s", "bundled cards"),
        tuple(rows),
        "Swept rows replay the card's decisions on this run's pause and turn-end points at each "
        "setting, without generating replies (pmc curve); rows of this run are what it "
        "measured: the share of pauses its scored speech did not take, and the median of its "
        "endpointer's own decision after each turn end.",
    )


def write_curve_figure(folder: Path, data: RunData) -> Figure | None:
    """The curves, the cards on them, the person, and the run's systems where it measured them."""
    curves = read_curves(Run(data.run_dir).workdir)
    if not curves:
        return None
    plot = new_plot(figsize=(6.4, 4.4))
    ax = plot.subplots()
    person = None
    for curve in curves:
        thresholds = {s.threshold for s in curve.settings}
        for threshold in sorted(thresholds, key=lambda t: -1.0 if t is None else t):
            line = [
                (s.decision_latency_s, s.hold_rate, (s.setting,) if s.setting else s.cards)
                for s in curve.settings
                if s.threshold == threshold
                and s.hold_rate is not None
                and s.decision_latency_s is not None
            ]
            xs = [float(x) for x, _, _ in line if x is not None]
            ys = [float(y) for _, y, _ in line if y is not None]
            label = f"{curve.card} swept"
            if threshold is not None and len(thresholds) > 1:
                label += f", threshold {threshold:g}"
            ax.plot(xs, ys, marker=".", label=label)
            for x, y, cards in zip(xs, ys, [c for _, _, c in line], strict=True):
                for name in cards:
                    ax.annotate(name, (x, y), fontsize=7)
        person = curve.person_latency_s if person is None else person
    for i, m in enumerate(_on_curves(data, curves)):
        if m.hold_rate is not None and m.decision_latency_s is not None:
            ax.plot(
                [m.decision_latency_s],
                [m.hold_rate],
                "D",
                fillstyle="none",
                color=f"C{(i + 3) % 10}",
                label=f"{m.system}, this run",
            )
    if person is not None:
        ax.plot([person], [1.0], "*", color="k", markersize=10, label="the person")
    ax.set_xlabel("median decision after the turn end, s")
    ax.set_ylabel("hold rate at pauses")
    ax.set_ylim(-0.02, 1.05)
    ax.legend(fontsize=7, loc="lower right")
    title = "Trade-off curve: hold rate at pauses against turn-end decision latency"
    plot.suptitle(title)
    plot.tight_layout()
    relative = f"{FIGURES_DIR}/tradeoff_curve.png"
    write_png(plot, folder / relative, dpi=DPI)
    return Figure("tradeoff_curve", title, relative)
