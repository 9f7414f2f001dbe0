"""The leaderboard as one self-contained HTML page: a sortable table per group of alike rows."""

from __future__ import annotations

import html
import os
from collections.abc import Sequence
from pathlib import Path

from pmc.leaderboard._board import COLUMNS, Entry, Group

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 2em; }
th, td { border-bottom: 1px solid #ddd; padding: 0.3em 0.7em; text-align: right; }
th:first-child, td:first-child, th:nth-child(2), td:nth-child(2) { text-align: left; }
th { cursor: pointer; user-select: none; background: #f4f4f4; }
th[aria-sort=ascending]::after { content: " \\25B2"; }
th[aria-sort=descending]::after { content: " \\25BC"; }
tr.reference td { color: #777; }
.differs { color: #a33; }
"""

SCRIPT = """
document.querySelectorAll('table.board').forEach(table => {
  table.querySelectorAll('th').forEach((th, column) => {
    th.addEventListener('click', () => {
      const up = th.getAttribute('aria-sort') !== 'ascending';
      table.querySelectorAll('th').forEach(h => h.removeAttribute('aria-sort'));
      th.setAttribute('aria-sort', up ? 'ascending' : 'descending');
      const body = table.tBodies[0];
      const key = row => row.cells[column].dataset.value;
      const rows = [...body.rows].sort((a, b) => {
        const x = key(a), y = key(b);
        if (x === '' || y === '') return (x === '') - (y === '');
        const nx = Number(x), ny = Number(y);
        const order = isNaN(nx) || isNaN(ny) ? x.localeCompare(y) : nx - ny;
        return up ? order : -order;
      });
      rows.forEach(row => body.appendChild(row));
    });
  });
});
"""


def _cell(value: str, sort: str | float | None) -> str:
    data = "" if sort is None else str(sort)
    return f'<td data-value="{html.escape(data)}">{html.escape(value)}</td>'


def _row(entry: Entry, page_dir: Path) -> str:
    link = os.path.relpath(entry.report, page_dir)
    system = entry.system + ("" if entry.reference is None else f" (reference: {entry.reference})")
    cells = [
        f'<td data-value="{html.escape(entry.run_id)}">'
        f'<a href="{html.escape(link)}">{html.escape(entry.run_id)}</a></td>',
        _cell(system, system),
    ]
    for column in COLUMNS:
        cell = entry.cells.get(column.key)
        cells.append(
            _cell("-" if cell is None else cell.text, None if cell is None else cell.estimate)
        )
    cells.append(_cell(str(entry.failed), entry.failed))
    css = ' class="reference"' if entry.reference is not None else ""
    return f"<tr{css}>{''.join(cells)}</tr>"


def page(groups: Sequence[Group], page_dir: Path) -> str:
    """The page: a table per group, each sortable by any column (click its heading)."""
    heads = ["run", "system", *(c.label + " [95% CI]" for c in COLUMNS), "failed points"]
    head = "".join(f"<th>{html.escape(h)}</th>" for h in heads)
    sections = []
    for i, group in enumerate(groups, 1):
        differs = "".join(f"<li>{html.escape(d)}</li>" for d in group.differs)
        note = (
            f'<p class="differs">Not comparable with group 1; it differs in:</p><ul>{differs}</ul>'
            if group.differs
            else ""
        )
        body = "".join(_row(e, page_dir) for e in group.entries)
        sections.append(
            f"<section><h2>Group {i}</h2>{note}"
            f'<table class="board"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
            "</section>"
        )
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        "<title>pmc leaderboard</title>"
        f"<style>{STYLE}</style></head><body><h1>pmc leaderboard</h1>"
        "<p>One row per system per run, each value with its 95% bootstrap interval over "
        "conversations. Rows share a table only when they were measured on the same points "
        "with the same score settings. Click a heading to sort; the run links to its report.</p>"
        f"{''.join(sections)}<script>{SCRIPT}</script></body></html>\n"
    )
