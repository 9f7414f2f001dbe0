"""One shape for every table, so each is written alike as Markdown, CSV, JSON and HTML.

Shared below the stages: the label inventory, the selection, the calibration and the report
all write their tables through :class:`Table`.
"""

from __future__ import annotations

import csv
import io as _io
from dataclasses import dataclass
from typing import Any

Cell = str | int | float | None
"""A table cell: text, a count, a value (None where nothing qualifies)."""


@dataclass(frozen=True)
class Table:
    """A titled table.

    Attributes:
        key: File stem and anchor (``takeover_by_pause_duration``).
        title: What it shows, with the paper's table or figure it mirrors.
        columns: Column headers.
        rows: One tuple of cells per row, as long as ``columns``.
        note: How to read it (shown under the table).
    """

    key: str
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    note: str = ""

    def __post_init__(self) -> None:
        for row in self.rows:
            if len(row) != len(self.columns):
                raise ValueError(f"table {self.key}: row {row!r} does not fit {self.columns!r}")

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "key": self.key,
            "title": self.title,
            "columns": list(self.columns),
            "rows": [[_plain(c) for c in row] for row in self.rows],
            "note": self.note,
        }

    def markdown(self) -> str:
        """A Markdown section: title, table, note."""
        lines = [f"## {self.title}", ""]
        lines.append("| " + " | ".join(self.columns) + " |")
        lines.append("|" + "---|" * len(self.columns))
        for row in self.rows:
            lines.append("| " + " | ".join(_md(show(c)) for c in row) + " |")
        if not self.rows:
            lines.append("| " + " | ".join("" for _ in self.columns) + " |")
        if self.note:
            lines += ["", self.note]
        return "\n".join(lines) + "\n"

    def csv(self) -> str:
        """Header and rows, values unrounded."""
        buffer = _io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(self.columns)
        writer.writerows(["" if c is None else c for c in row] for row in self.rows)
        return buffer.getvalue()


def show(cell: Cell) -> str:
    """A cell as people read it: values to two decimals, ``-`` for nothing."""
    if cell is None:
        return "-"
    if isinstance(cell, float):
        return f"{cell:.2f}"
    return str(cell)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _plain(cell: Cell) -> Cell:
    return round(cell, 4) if isinstance(cell, float) else cell


@dataclass(frozen=True)
class Figure:
    """A figure of the report.

    Attributes:
        key: File stem and anchor.
        title: What it shows, with the paper's figure it mirrors.
        file: The PNG, relative to the report folder.
    """

    key: str
    title: str
    file: str

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {"key": self.key, "title": self.title, "file": self.file}


__all__ = ["Cell", "Figure", "Table", "show"]
