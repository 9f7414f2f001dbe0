"""``pmc report``: every table and figure of a scored run, as files and as one HTML folder."""

from __future__ import annotations

from pathlib import Path

from pmc.harness import Run
from pmc.report._aggregate import RESAMPLES
from pmc.report._channel import channel_table
from pmc.report._compare import Side, paired_table, pairs_in_run, side
from pmc.report._curve import curve_table, write_curve_figure
from pmc.report._data import RunData, load_run
from pmc.report._figures import write_figures
from pmc.report._heading import headed, under
from pmc.report._html import write_html
from pmc.report._latency import latency_table
from pmc.report._lead import write_summary_figure
from pmc.report._main import main_table
from pmc.report._outcomes import distribution_table, outcomes_table
from pmc.report._pauses import boundary_table, duration_table, tercile_table
from pmc.report._provenance import provenance_of
from pmc.report._recall import agreement_table, history_table
from pmc.report._repeats import agreement_table as repeat_table
from pmc.report._review import review_section
from pmc.report._summary import summary_of
from pmc.report._twin import twin_of, twin_table, write_twin_figure
from pmc.report._write import write_tables
from pmc.table import Figure, Table

"""The report's folder inside the run's folder."""


def comparison_pairs(data: RunData, other: RunData | None) -> list[tuple[Side, Side]]:
    """The pairs to compare: configurations of one system, and each system across runs."""
    pairs = [(side(data, a), side(data, b)) for a, b in pairs_in_run(data)]
    if other is not None:
        for system in data.systems:
            if system in other.scores and data.references[system] is None:
                pairs.append(
                    (
                        side(data, system, f"{system} ({data.run_id})"),
                        side(other, system, f"{system} ({other.run_id})"),
                    )
                )
    return pairs


def extended_tables(data: RunData, other: RunData | None, seed: int, resamples: int) -> list[Table]:
    """The appendix analyses, in the paper's order."""
    return [
        duration_table(data),
        distribution_table(data),
        history_table(data),
        boundary_table(data),
        paired_table(comparison_pairs(data, other), seed, resamples),
        latency_table(data, seed, resamples),
        agreement_table(data),
        outcomes_table(data),
        tercile_table(data),
    ]


def build_report(
    run_dir: Path,
    compare: Path | None = None,
    seed: int = 0,
    resamples: int = RESAMPLES,
    folder: Path | None = None,
) -> Path:
    """Write the report of a scored run; return its ``index.html``.

    It leads with the summary, every system against the person on the paper's questions
    (figure, then table), then the main tables, the appendix tables and the figures.
    """
    data = load_run(run_dir)
    other = load_run(compare) if compare is not None else None
    twin = None if other is None else twin_of(data, other)  # refused before anything is written
    folder = folder or Run(run_dir).report_dir
    rows = main_table(data, seed, resamples)
    tables = extended_tables(data, other, seed, resamples)
    for extra in (repeat_table(data, seed, resamples), channel_table(data, seed, resamples)):
        tables += [] if extra is None else [extra]
    tables += review_section(Run(run_dir).workdir, data.points)
    summary = summary_of(data, rows)
    summary_figure = None if summary is None else write_summary_figure(folder, data, summary)
    figures = write_figures(folder, data)
    curve = write_curve_figure(folder, data)
    figures += [] if curve is None else [curve]
    tables += [t for t in (curve_table(data),) if t is not None]
    # Every title names the run's conditions; the twin's names both runs' settings itself.
    tables, figures = headed(tables, data.conditions), headed(figures, data.conditions)
    if summary_figure is not None:
        summary_figure = headed([summary_figure], data.conditions)[0]
    if twin is not None:
        tables.append(twin_table(twin, seed, resamples))
        drawn = write_twin_figure(folder, twin, seed, resamples)
        figures += [] if drawn is None else [drawn]
    settings = {
        "seed": seed,
        "resamples": resamples,
        "run_id": data.run_id,
        "compare_run_id": None if other is None else other.run_id,
        "history": data.history.value,
        "compare_history": None if other is None else other.history.value,
        "conditions": [c.to_dict() for c in data.conditions],
        "compare_conditions": None if other is None else [c.to_dict() for c in other.conditions],
        "unscored_systems": list(data.unscored),
        "provenance": provenance_of(data),
    }
    written = write_tables(
        folder, rows, tables, figures, settings, summary, summary_figure, data.conditions
    )
    lead: list[Table | Figure] = []
    if summary is not None and summary_figure is not None:
        lead = [summary_figure, *headed([summary.table()], data.conditions)]
    title = f"pmc report: run {data.run_id}{under(data.conditions)}"
    return write_html(folder, data, written, figures, title, lead)
