"""The report's figures as PNG, in the spirit of the paper's Figures 2, 3, 4, 7 and 8."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pmc.points import PointKind
from pmc.report._data import RunData
from pmc.report._outcomes import turn_values
from pmc.report._pauses import bin_label, duration_bins, takeover_by_duration
from pmc.report._recall import STRICT, by_history, judges, prefixes
from pmc.scoring import PauseOutcome, Score
from pmc.table import Figure, new_plot, write_png

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure as Plot

FIGURES_DIR = "figures"
DPI = 110
LATENCY_FLOOR_S = 0.05
"""Figure 8 draws latencies on a log axis; those at or below this (words already under way at
the turn end) are drawn at the left edge, as the paper does."""


def _color(data: RunData, system: str) -> str:
    """One colour per system, the same in every figure (matplotlib's default cycle)."""
    return f"C{data.systems.index(system) % 10}"


def _legend(ax: Axes, **kwargs: Any) -> None:
    """A legend, where the panel drew something labelled.

    Matplotlib warns of an empty legend otherwise: a run of pauses alone has no system in the
    pause figure's panel (c), and a run where nobody spoke has none in its panel (b).
    """
    if ax.get_legend_handles_labels()[1]:
        ax.legend(**kwargs)


def _outcome_shares(data: RunData, system: str) -> list[float]:
    scores = data.first(system, PointKind.PAUSE)
    outcomes = [s.pause.outcome if s.pause else PauseOutcome.SILENT for s in scores]
    return [outcomes.count(o) / len(outcomes) for o in PauseOutcome]


def _relative_to_pause_end(data: RunData, s: Score) -> float | None:
    if s.pause is None:
        return None
    point = data.points[s.point_id]
    if s.pause.outcome is PauseOutcome.TAKEOVER and s.pause.latency_s is not None:
        return point.boundary_stream_s + s.pause.latency_s - point.boundary_end_stream_s
    return s.pause.after_latency_s


def _ecdf(ax: Axes, values: list[float], total: int, label: str, color: str) -> None:
    if not values or not total:
        return
    xs = np.sort(values)
    ax.step(xs, np.arange(1, len(xs) + 1) / total, where="post", label=label, color=color)


def _rate_lines(
    ax: Axes,
    xs: Sequence[float | str],
    by_system: dict[str, list[tuple[float | None, int]]],
    data: RunData,
) -> None:
    """A line per system through its rates (gaps where a rate is None)."""
    for system, cells in by_system.items():
        ax.plot(
            xs,
            [np.nan if r is None else r for r, _ in cells],
            marker="o",
            label=system,
            color=_color(data, system),
        )


def figure_pauses(data: RunData) -> Plot:
    """Figure 2: outcome shares, first words against the pause end, takeover against response."""
    systems = [s for s in data.systems if data.first(s, PointKind.PAUSE)]
    fig = new_plot(figsize=(15, 0.5 * len(systems) + 3))
    axes = fig.subplots(1, 3)
    left = np.zeros(len(systems))
    for outcome, share in zip(
        PauseOutcome, np.array([_outcome_shares(data, s) for s in systems]).T, strict=True
    ):
        axes[0].barh(systems, share, left=left, label=outcome.value)
        left += share
    axes[0].set_xlabel("share of pause points")
    axes[0].legend(loc="lower right")
    axes[0].set_title("(a) what the system did")
    for system in systems:
        scores = data.first(system, PointKind.PAUSE)
        values = [v for v in (_relative_to_pause_end(data, s) for s in scores) if v is not None]
        _ecdf(axes[1], values, len(scores), system, _color(data, system))
    axes[1].axvline(0, linestyle="--", color="grey")
    axes[1].set_xlabel("first words - pause end (s)")
    axes[1].set_ylabel("share of pause points")
    axes[1].set_title("(b) when the first words landed")
    _legend(axes[1], fontsize="small")
    for system in systems:
        turns = data.first(system, PointKind.TURN_END)
        if not turns:
            continue
        taken = _outcome_shares(data, system)[list(PauseOutcome).index(PauseOutcome.TAKEOVER)]
        answered = sum(bool(s.reply and s.reply.words) for s in turns) / len(turns)
        axes[2].scatter([answered], [taken], label=system, color=_color(data, system))
    axes[2].set_xlim(-0.05, 1.05)
    axes[2].set_ylim(-0.05, 1.05)
    axes[2].set_xlabel("response rate at turn ends")
    axes[2].set_ylabel("takeover rate at pauses")
    axes[2].set_title("(c) each system")
    _legend(axes[2], fontsize="small")
    return fig


def figure_turn_end(data: RunData) -> Plot:
    """Figure 3: median and interquartile range of latency, duration and word ratios."""
    systems = [s for s in data.systems if data.first(s, PointKind.TURN_END)]
    fig = new_plot(figsize=(15, 0.5 * len(systems) + 3))
    axes = fig.subplots(1, 3)
    fields = (
        ("latency_s", "(a) latency to first word (s)"),
        ("duration_ratio", "(b) duration ratio"),
        ("word_ratio", "(c) word ratio"),
    )
    for ax, (field, title) in zip(axes, fields, strict=True):
        for y, system in enumerate(systems):
            values = turn_values(data, system, field)
            if values:
                q1, med, q3 = np.percentile(values, [25, 50, 75])
                ax.errorbar(
                    [med],
                    [y],
                    xerr=[[med - q1], [q3 - med]],
                    fmt="o",
                    capsize=3,
                    color=_color(data, system),
                )
        ax.set_yticks(range(len(systems)), systems)
        if field != "latency_s":
            ax.axvline(1.0, linestyle="--", color="grey")
        ax.set_title(title)
    return fig


def figure_recall(data: RunData) -> Plot:
    """Figure 4: recall accuracy against history length, conversation and fact recall."""
    found = judges(data)
    scorer = found[0] if found else STRICT
    fig = new_plot(figsize=(11, 4))
    axes = fig.subplots(1, 2, sharey=True)
    lengths = prefixes(data)
    for ax, kind in zip(axes, (PointKind.CONVERSATION_RECALL, PointKind.FACT_RECALL), strict=True):
        _rate_lines(ax, lengths, by_history(data, kind, scorer), data)
        ax.set_xlabel("history (s)")
        ax.set_title(f"({'ab'[kind is PointKind.FACT_RECALL]}) {kind.value.replace('_', ' ')}")
        ax.set_ylim(-0.05, 1.05)
    axes[0].set_ylabel(f"accuracy ({scorer})")
    _legend(axes[1], fontsize="small")
    return fig


def figure_duration(data: RunData) -> Plot:
    """Figure 7: takeover rate against labelled pause duration."""
    fig = new_plot(figsize=(8, 4))
    ax = fig.subplots()
    labels = [bin_label(lo, hi) for lo, hi in duration_bins()]
    _rate_lines(ax, labels, takeover_by_duration(data), data)
    ax.set_xlabel("labelled pause duration")
    ax.set_ylabel("takeover rate")
    ax.set_ylim(-0.05, 1.05)
    _legend(ax, fontsize="small")
    return fig


def figure_cdf(data: RunData) -> Plot:
    """Figure 8: cumulative distributions of turn-end latency and duration ratio, log axes."""
    fig = new_plot(figsize=(12, 4))
    axes = fig.subplots(1, 2)
    for system in data.systems:
        total = len(data.first(system, PointKind.TURN_END))
        latency = [max(v, LATENCY_FLOOR_S) for v in turn_values(data, system, "latency_s")]
        ratio = [v for v in turn_values(data, system, "duration_ratio") if v > 0]
        _ecdf(axes[0], latency, total, system, _color(data, system))
        _ecdf(axes[1], ratio, total, system, _color(data, system))
    for ax, title in zip(
        axes, ("(a) latency to first word (s)", "(b) duration ratio"), strict=True
    ):
        if ax.lines:
            ax.set_xscale("log")
        ax.set_title(title)
        ax.set_ylabel("share of turn-end points")
    axes[1].axvline(1.0, linestyle="--", color="grey")
    _legend(axes[1], fontsize="small")
    return fig


def _clips(data: RunData, system: str, kind: PointKind) -> list[tuple[float, float | None]]:
    """Stop latency and the person's own value at each reached talk-over point of ``kind``."""
    return [
        (s.clip.stop_latency_s, s.clip.person_s)
        for s in data.first(system, kind)
        if s.clip is not None and s.clip.talking and s.clip.stop_latency_s is not None
    ]


def figure_talk_over(data: RunData) -> Plot:
    """Stop latency after the person's clip, each system beside the person's labelled values.

    Each system's median and interquartile range, and below it, in grey, the person's at the
    same points: at barge-ins how soon the person gave up the floor, at backchannels how long
    they kept talking.
    """
    kinds = (
        (PointKind.BARGE_IN, "(a) barge-in: clip onset to end of talk (s)"),
        (PointKind.BACKCHANNEL, "(b) backchannel: clip onset to end of talk (s)"),
    )
    systems = [s for s in data.systems if any(data.first(s, k) for k, _ in kinds)]
    fig = new_plot(figsize=(12, 0.6 * len(systems) + 3))
    axes = fig.subplots(1, 2)
    for ax, (kind, title) in zip(axes, kinds, strict=True):
        for y, system in enumerate(systems):
            pairs = _clips(data, system, kind)
            mine = [a for a, _ in pairs]
            person = [b for _, b in pairs if b is not None]
            for values, offset, color in ((mine, 0.0, _color(data, system)), (person, 0.3, "grey")):
                if values:
                    q1, med, q3 = np.percentile(values, [25, 50, 75])
                    ax.errorbar(
                        [med],
                        [y + offset],
                        xerr=[[med - q1], [q3 - med]],
                        fmt="o",
                        capsize=3,
                        color=color,
                    )
        ax.set_yticks(range(len(systems)), systems)
        ax.invert_yaxis()
        ax.set_title(title)
        ax.set_xlabel("grey: the person at the same points")
    return fig


FIGURES: tuple[tuple[str, str, Callable[[RunData], Plot], PointKind], ...] = (
    (
        "pauses",
        "Pause points: outcomes, timing, and each system (paper Figure 2)",
        figure_pauses,
        PointKind.PAUSE,
    ),
    (
        "turn_end",
        "Turn-end points: latency, duration and word ratios (paper Figure 3)",
        figure_turn_end,
        PointKind.TURN_END,
    ),
    (
        "recall",
        "Recall accuracy against history length (paper Figure 4)",
        figure_recall,
        PointKind.CONVERSATION_RECALL,
    ),
    (
        "takeover_by_pause_duration",
        "Takeover rate against labelled pause duration (paper Figure 7)",
        figure_duration,
        PointKind.PAUSE,
    ),
    (
        "turn_end_cdf",
        "Turn-end cumulative distributions (paper Figure 8)",
        figure_cdf,
        PointKind.TURN_END,
    ),
    (
        "talk_over",
        "Talked over while replying: when each system stopped, beside the person",
        figure_talk_over,
        PointKind.BARGE_IN,
    ),
)
"""Each figure: its key, title, how it is drawn, and the kind of point it needs."""


def write_figures(folder: Path, data: RunData) -> list[Figure]:
    """Draw every figure the run has points for; return them in order."""
    out = []
    present = {k for system in data.systems for k in data.kinds(system)}
    for key, title, draw, needs in FIGURES:
        if needs not in present:
            continue
        fig = draw(data)
        fig.suptitle(title)
        fig.tight_layout()
        relative = f"{FIGURES_DIR}/{key}.png"
        write_png(fig, folder / relative, dpi=DPI)
        out.append(Figure(key, title, relative))
    return out
