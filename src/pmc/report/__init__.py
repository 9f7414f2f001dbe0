"""Report stage: the paper's tables and figures from a run's scores, and an HTML report.

The main table per system and point kind with bootstrap intervals over conversations
(``_aggregate``, ``_main``), the summary that leads the report, every system against the person
on the paper's questions (``_summary``, its figure ``_lead``), the appendix analyses
(``_pauses``, ``_recall``, ``_outcomes``, ``_compare``), where each reply's latency goes
(``_latency``), a run against its twin, the context ablation or a run under conditions
(``_twin``, on the paired measures of ``_measures``), the figures (``_figures``), and the
files: Markdown, CSV, a versioned ``results.json`` (``_write``) and a static HTML folder
(``_html``, its rollout pages from ``_rollouts``, ``_pages``, ``_texts`` and ``_timeline``, each
with a stereo file to listen to from ``_listen``), put together by :func:`build_report`. A run
under conditions is named in every title and page heading (``_heading``).
"""

from pmc.report._aggregate import RESAMPLES, Value, bootstrap, metrics_for
from pmc.report._compare import paired_interval
from pmc.report._data import RunData, load_run
from pmc.report._latency import PARTS, LatencyParts, latency_parts, latency_table
from pmc.report._main import FirstLook, MainRow, first_look, main_table, row
from pmc.report._measures import MEASURES, Measure, Paired, paired
from pmc.report._stage import build_report
from pmc.report._write import RESULTS_JSON, main_tables, markdown, write_main_table

__all__ = [
    "MEASURES",
    "PARTS",
    "RESAMPLES",
    "RESULTS_JSON",
    "FirstLook",
    "LatencyParts",
    "MainRow",
    "Measure",
    "Paired",
    "RunData",
    "Value",
    "bootstrap",
    "build_report",
    "first_look",
    "latency_parts",
    "latency_table",
    "load_run",
    "main_table",
    "main_tables",
    "markdown",
    "metrics_for",
    "paired",
    "paired_interval",
    "row",
    "write_main_table",
]
