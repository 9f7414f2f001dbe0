"""One shape for every table, so each is written alike as Markdown, CSV, JSON and HTML.

Shared below the stages: the label inventory, the selection, the calibration and the report
all write their tables through :class:`Table`, and their figures through :func:`new_plot` and
:func:`write_png`.
"""

from __future__ import annotations

import csv
import io as _io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pmc import io

if TYPE_CHECKING:
    from matplotlib.figure import Figure as Plot

Cell = str | int | float | None
"""A table cell: text, a count, a value (None where nothing qualifies)."""


class Align(StrEnum):
    """How a Markdown column is aligned, spelled as its cell in the separator row."""

    DEFAULT = "---"
    RIGHT = "---:"
    CENTER = ":---:"


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

    def markdown(self, heading: bool = True, align: Sequence[Align] = ()) -> str:
        """A Markdown section: title, table, note.

        Args:
            heading: False for the table alone, as a file of its own: no ``## title`` heading,
                and no empty row standing in for a table without rows.
            align: Each column's alignment, spelled out in the separator row (``| --- | ---: |``);
                without it the separator row is ``|---|---|``.

        Raises:
            ValueError: If ``align`` is given and does not fit the columns.
        """
        lines = [f"## {self.title}", ""] if heading else []
        lines.append(_md_row(self.columns))
        if not align:
            lines.append("|" + "---|" * len(self.columns))
        elif len(align) == len(self.columns):
            lines.append(_md_row(align))
        else:
            raise ValueError(f"table {self.key}: alignment {align!r} does not fit {self.columns!r}")
        lines += [_md_row(_md(show(c)) for c in row) for row in self.rows]
        if heading and not self.rows:
            lines.append(_md_row("" for _ in self.columns))
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


def _md_row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(cells) + " |"


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

    def markdown(self) -> str:
        """A Markdown section: title, then the image."""
        return f"## {self.title}\n\n![{self.title}]({self.file})\n"


_PNG_METADATA: dict[str, str | None] = {"Software": None}
"""No software version in a PNG, so its bytes depend only on what is drawn."""


def new_plot(**kwargs: Any) -> Plot:
    """A blank matplotlib figure (``Figure``'s own arguments) that draws into files only.

    A plain figure, not pyplot's: no window, no global list of open figures to close, and
    PNGs through Agg whatever backend is set.
    """
    from matplotlib.figure import Figure as Plot

    return Plot(**kwargs)


def write_png(plot: Plot, path: Path, dpi: float | None = None) -> None:
    """Write a figure as PNG, atomically, at ``dpi`` (default: the figure's own)."""
    with io.atomic_open(path, "wb") as handle:
        plot.savefig(handle, format="png", dpi=dpi, metadata=_PNG_METADATA)


__all__ = ["Align", "Cell", "Figure", "Table", "new_plot", "show", "write_png"]
