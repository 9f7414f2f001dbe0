"""The main table on disk: Markdown to read, CSV to load, JSON for machines (versioned)."""

from __future__ import annotations

import csv
import io as _io
from collections.abc import Sequence
from pathlib import Path

from pmc import io
from pmc.report._aggregate import Value
from pmc.report._main import MainRow

RESULTS_SCHEMA_VERSION = 1
MAIN_MD = "main_table.md"
MAIN_CSV = "main_table.csv"
RESULTS_JSON = "results.json"


def cell(value: Value) -> str:
    """``estimate [ci_low, ci_high]``, or ``-`` where nothing qualifies."""
    if value.estimate is None:
        return "-"
    text = f"{value.estimate:.2f}"
    if value.ci_low is not None and value.ci_high is not None:
        text += f" [{value.ci_low:.2f}, {value.ci_high:.2f}]"
    return text


def markdown(rows: Sequence[MainRow]) -> str:
    """One table per point kind (results are never pooled across kinds)."""
    parts = []
    for kind in dict.fromkeys(r.kind for r in rows):
        mine = [r for r in rows if r.kind is kind]
        names = list(mine[0].values)
        parts.append(f"## {kind.value.replace('_', ' ')}\n")
        parts.append("| system | points | no audio | failed | " + " | ".join(names) + " |")
        parts.append("|---|---|---|---|" + "---|" * len(names))
        for r in mine:
            cells = [cell(r.values[n]) for n in names]
            parts.append(
                f"| {r.system} | {r.points} | {r.no_audio} | {r.failed} | "
                + " | ".join(cells)
                + " |"
            )
        parts.append("")
    return "\n".join(parts)


def table_csv(rows: Sequence[MainRow]) -> str:
    """One line per system, kind and metric."""
    buffer = _io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["system", "kind", "metric", "estimate", "n", "q1", "q3", "ci_low", "ci_high"])
    for r in rows:
        for name, v in r.values.items():
            writer.writerow(
                [r.system, r.kind.value, name, v.estimate, v.n, v.q1, v.q3, v.ci_low, v.ci_high]
            )
    return buffer.getvalue()


def write_main_table(rows: Sequence[MainRow], folder: Path, seed: int, resamples: int) -> None:
    """Write the Markdown, the CSV and ``results.json`` (atomically)."""
    io.write_text(folder / MAIN_MD, markdown(rows))
    io.write_text(folder / MAIN_CSV, table_csv(rows))
    io.write_json(
        folder / RESULTS_JSON,
        {
            "schema_version": RESULTS_SCHEMA_VERSION,
            "bootstrap": {"resamples": resamples, "seed": seed, "unit": "conversation"},
            "main_table": [r.to_dict() for r in rows],
        },
    )
