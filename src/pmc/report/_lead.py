"""The summary figure that leads the report: one panel per question, every system on each.

Each panel is one of the paper's questions (:mod:`pmc.report._summary`). Systems run down the
y axis in the report's order, each a marker at its estimate with its 95% bootstrap interval,
in the colour it has in every figure (:func:`pmc.report._figures._color`); the person's value is
a dashed vertical line. Reference rows are hollow markers on dashed intervals, their names in
grey italics: bounds to read the systems against, not competitors.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pmc.report._data import RunData
from pmc.report._figures import DPI, FIGURES_DIR, _color
from pmc.report._summary import SUMMARY_KEY, Question, Summary, SummaryRow
from pmc.table import Figure, new_plot, write_png

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure as Plot

TITLE = "Summary: each system against the person on the paper's questions"
PANEL_W = 1.9
"""Inches per question's panel: five fit the page's width at a readable size."""
ROW_H = 0.36
"""Inches per system."""
NAMES_W = 2.0
"""Inches for the systems' names."""
LABEL_CHARS = 24
"""An axis label longer than this is broken in two, to fit under its panel."""
MIN_W = 8.0
"""Inches the title needs, however few questions the run answers."""
PERSON = "black"
REFERENCE_NAME = "#666666"


def _point(ax: Axes, y: int, row: SummaryRow, question: Question, color: str) -> None:
    """A system's marker and interval on one panel (nothing where it has no value)."""
    value = row.values.get(question.key)
    if value is None or value.estimate is None:
        return
    est = value.estimate
    xerr = None
    if value.ci_low is not None and value.ci_high is not None:
        # A percentile interval of a median need not hold the estimate; never draw a negative arm.
        xerr = [[max(est - value.ci_low, 0.0)], [max(value.ci_high - est, 0.0)]]
    reference = row.reference is not None
    bars = ax.errorbar(
        [est],
        [y],
        xerr=xerr,
        fmt="D" if reference else "o",
        color=color,
        markerfacecolor="white" if reference else color,
        markersize=6,
        capsize=3,
    )
    if reference:
        for line in bars.lines[2]:
            line.set_linestyle("--")


def figure_summary(data: RunData, summary: Summary) -> Plot:
    """The summary as one row of panels, a panel per question the run has points for."""
    from matplotlib.ticker import MaxNLocator

    rows = summary.rows
    fig = new_plot(
        figsize=(max(NAMES_W + PANEL_W * len(summary.questions), MIN_W), 1.9 + ROW_H * len(rows)),
        layout="constrained",
    )
    axes = fig.subplots(1, len(summary.questions), sharey=True, squeeze=False)[0]
    for ax, question in zip(axes, summary.questions, strict=True):
        for y, row in enumerate(rows):
            _point(ax, y, row, question, _color(data, row.system))
        person = summary.person[question.key]
        if person is not None:
            ax.axvline(person, linestyle="--", color=PERSON, linewidth=1)
        if question.rate:
            ax.set_xlim(-0.05, 1.05)
            ax.set_xticks([0.0, 0.5, 1.0])
        else:
            ax.xaxis.set_major_locator(MaxNLocator(4))
        ax.set_title(question.question)
        label = question.measure
        if len(label) > LABEL_CHARS:  # the recall scorer's name goes on a line of its own
            label = label.replace(" (", "\n(", 1)
        ax.set_xlabel(label, fontsize="small")
        ax.grid(axis="x", alpha=0.3)
    first = axes[0]
    first.set_yticks(range(len(rows)), [r.label for r in rows])
    first.set_ylim(len(rows) - 0.5, -0.5)  # the report's order, top down
    for label, row in zip(first.get_yticklabels(), rows, strict=True):
        if row.reference is not None:
            label.set_color(REFERENCE_NAME)
            label.set_fontstyle("italic")
    _legend(fig, any(r.reference is not None for r in rows))
    fig.suptitle(TITLE)
    return fig


def _legend(fig: Plot, references: bool) -> None:
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], marker="o", color="grey", linestyle="none", label="system (95% interval)")
    ]
    if references:
        handles.append(
            Line2D(
                [],
                [],
                marker="D",
                color="grey",
                markerfacecolor="white",
                linestyle="none",
                label="reference row",
            )
        )
    handles.append(Line2D([], [], color=PERSON, linestyle="--", linewidth=1, label="the person"))
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), frameon=False)


def write_summary_figure(folder: Path, data: RunData, summary: Summary) -> Figure:
    """Draw the summary figure."""
    relative = f"{FIGURES_DIR}/{SUMMARY_KEY}.png"
    write_png(figure_summary(data, summary), folder / relative, dpi=DPI)
    return Figure(f"{SUMMARY_KEY}_figure", TITLE, relative)
