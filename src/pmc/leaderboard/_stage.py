"""``pmc leaderboard``'s work: read many runs' reports, group them, write the page, CSV and JSON."""

from __future__ import annotations

import csv
import io as text_io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pmc import io
from pmc.errors import InputError
from pmc.leaderboard._board import (
    COLUMNS,
    LEADERBOARD_SCHEMA_VERSION,
    Entry,
    Group,
    grouped,
    read_entries,
)
from pmc.leaderboard._page import page

PAGE = "index.html"
CSV_FILE = "leaderboard.csv"
JSON_FILE = "leaderboard.json"


@dataclass(frozen=True)
class Board:
    """What was written, and the runs left out (each with why)."""

    folder: Path
    groups: tuple[Group, ...]
    skipped: tuple[InputError, ...]


def build_leaderboard(runs: Sequence[Path], folder: Path) -> Board:
    """Every system of every run with a report, grouped, written to ``folder``.

    A run without a readable report is left out with its reason; the others are written.
    """
    entries: list[Entry] = []
    skipped = []
    for run in runs:
        try:
            entries += read_entries(run)
        except InputError as exc:
            skipped.append(exc)
    groups = tuple(grouped(entries))
    folder.mkdir(parents=True, exist_ok=True)
    io.write_text(folder / PAGE, page(groups, folder))
    io.write_text(folder / CSV_FILE, _csv(groups))
    io.write_json(
        folder / JSON_FILE,
        {
            "schema_version": LEADERBOARD_SCHEMA_VERSION,
            "groups": [
                {"differs": list(g.differs), "rows": [e.to_dict() for e in g.entries]}
                for g in groups
            ],
            "skipped": [str(e) for e in skipped],
        },
    )
    return Board(folder, groups, tuple(skipped))


def _csv(groups: Sequence[Group]) -> str:
    buffer = text_io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    values = [f"{c.key}{part}" for c in COLUMNS for part in ("", "_ci_low", "_ci_high")]
    writer.writerow(["group", "run_id", "system", "reference", *values, "failed", "report"])
    for i, group in enumerate(groups, 1):
        for e in group.entries:
            cells = [e.cells.get(c.key) for c in COLUMNS]
            numbers = [
                "" if cell is None or v is None else f"{v:.4f}"
                for cell in cells
                for v in (
                    (None, None, None) if cell is None else (cell.estimate, cell.low, cell.high)
                )
            ]
            writer.writerow(
                [i, e.run_id, e.system, e.reference or "", *numbers, e.failed, e.report]
            )
    return buffer.getvalue()
