"""Leaderboard stage: many runs' reports side by side, where their measurements are alike.

``_board`` reads each run's ``results.json`` into a row per system and groups the rows by what
they were measured on (points and score settings, from the report's provenance); ``_page``
writes one self-contained, sortable HTML page; ``_stage`` writes it with a CSV and a JSON
(docs/architecture.md "Leaderboard").
"""

from pmc.leaderboard._board import (
    COLUMNS,
    LEADERBOARD_SCHEMA_VERSION,
    Cell,
    Column,
    Entry,
    Group,
    grouped,
    read_entries,
)
from pmc.leaderboard._page import page
from pmc.leaderboard._stage import CSV_FILE, JSON_FILE, PAGE, Board, build_leaderboard

__all__ = [
    "COLUMNS",
    "CSV_FILE",
    "JSON_FILE",
    "LEADERBOARD_SCHEMA_VERSION",
    "PAGE",
    "Board",
    "Cell",
    "Column",
    "Entry",
    "Group",
    "build_leaderboard",
    "grouped",
    "page",
    "read_entries",
]
