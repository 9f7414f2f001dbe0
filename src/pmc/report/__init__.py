"""Report stage (being built): the paper's tables and figures from a run's scores.

Built so far: the main table's values per system and point kind, with quartiles and bootstrap
intervals over conversations (``_aggregate``, ``_main``).
"""

from pmc.report._aggregate import RECALL_PREFIX_S, RESAMPLES, Value, bootstrap, metrics_for
from pmc.report._main import MainRow, main_table, row

__all__ = [
    "RECALL_PREFIX_S",
    "RESAMPLES",
    "MainRow",
    "Value",
    "bootstrap",
    "main_table",
    "metrics_for",
    "row",
]
