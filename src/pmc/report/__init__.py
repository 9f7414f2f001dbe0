"""Report stage (being built): the paper's tables and figures from a run's scores.

Built so far: the main table's values per system and point kind, with quartiles and bootstrap
intervals over conversations (``_aggregate``, ``_main``), written as Markdown, CSV and a
versioned ``results.json`` (``_write``).
"""

from pmc.report._aggregate import RECALL_PREFIX_S, RESAMPLES, Value, bootstrap, metrics_for
from pmc.report._main import MainRow, main_table, row
from pmc.report._write import markdown, table_csv, write_main_table

__all__ = [
    "RECALL_PREFIX_S",
    "RESAMPLES",
    "MainRow",
    "Value",
    "bootstrap",
    "main_table",
    "markdown",
    "metrics_for",
    "row",
    "table_csv",
    "write_main_table",
]
