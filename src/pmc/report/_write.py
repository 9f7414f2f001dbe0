"""The report's tables on disk: Markdown to read, CSV to load, JSON for machines (versioned)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pmc import io
from pmc.points import PointKind
from pmc.report._aggregate import Value
from pmc.report._main import MainRow
from pmc.table import Cell, Figure, Table

RESULTS_SCHEMA_VERSION = 2
MAIN_MD = "main_table.md"
MAIN_CSV = "main_table.csv"
REPORT_MD = "report.md"
RESULTS_JSON = "results.json"
TABLES_DIR = "tables"


def cell(value: Value) -> str:
    """``estimate [ci_low, ci_high]``, or ``-`` where nothing qualifies."""
    if value.estimate is None:
        return "-"
    text = f"{value.estimate:.2f}"
    if value.ci_low is not None and value.ci_high is not None:
        text += f" [{value.ci_low:.2f}, {value.ci_high:.2f}]"
    return text


def spread(value: Value) -> str:
    """``estimate (q1-q3)`` for medians, ``estimate`` for rates, ``-`` where nothing qualifies."""
    if value.estimate is None:
        return "-"
    if value.q1 is None or value.q3 is None:
        return f"{value.estimate:.2f}"
    return f"{value.estimate:.2f} ({value.q1:.2f}-{value.q3:.2f})"


def interval(value: Value) -> str:
    """``[ci_low, ci_high]``, or ``-``."""
    if value.ci_low is None or value.ci_high is None:
        return "-"
    return f"[{value.ci_low:.2f}, {value.ci_high:.2f}]"


def _kind_name(kind: PointKind) -> str:
    return kind.value.replace("_", " ")


def _system(row: MainRow) -> str:
    return (
        row.system if row.reference is None else f"{row.system} (reference: {row.reference.value})"
    )


def main_tables(rows: Sequence[MainRow]) -> list[Table]:
    """Per point kind (never pooled): Table 3's values, then Table 14's intervals."""
    out = []
    for kind in dict.fromkeys(r.kind for r in rows):
        mine = [r for r in rows if r.kind is kind]
        names = list(mine[0].values)
        head = ("system", "points", "no audio", "failed", *names)
        values: list[tuple[Cell, ...]] = []
        cis: list[tuple[Cell, ...]] = []
        for r in mine:
            counts: tuple[Cell, ...] = (_system(r), r.points, r.no_audio, r.failed)
            values.append((*counts, *(spread(r.values[n]) for n in names)))
            cis.append((*counts, *(interval(r.values[n]) for n in names)))
        recall = " (120 s of history)" if "strict" in names else ""
        out.append(
            Table(
                f"main_{kind.value}",
                f"Main table: {_kind_name(kind)} points{recall} (paper Table 3)",
                head,
                tuple(values),
                "Rates over rollouts; medians (interquartile range) over rollouts with words. "
                "Reference rows are named by their role.",
            )
        )
        out.append(
            Table(
                f"intervals_{kind.value}",
                f"95% bootstrap intervals: {_kind_name(kind)} points (paper Table 14)",
                head,
                tuple(cis),
                "Conversations resampled with replacement.",
            )
        )
    return out


def markdown(rows: Sequence[MainRow]) -> str:
    """The main table per point kind: estimate and interval in each cell."""
    parts = []
    for kind in dict.fromkeys(r.kind for r in rows):
        mine = [r for r in rows if r.kind is kind]
        names = list(mine[0].values)
        parts.append(f"## {_kind_name(kind)}\n")
        parts.append("| system | points | no audio | failed | " + " | ".join(names) + " |")
        parts.append("|---|---|---|---|" + "---|" * len(names))
        for r in mine:
            cells = [cell(r.values[n]) for n in names]
            parts.append(
                f"| {_system(r)} | {r.points} | {r.no_audio} | {r.failed} | "
                + " | ".join(cells)
                + " |"
            )
        parts.append("")
    return "\n".join(parts)


def table_csv(rows: Sequence[MainRow]) -> str:
    """One line per system, kind and metric, values unrounded."""
    table = Table(
        "main",
        "main",
        ("system", "kind", "reference", "metric", "estimate", "n", "q1", "q3", "ci_low", "ci_high"),
        tuple(
            (
                r.system,
                r.kind.value,
                None if r.reference is None else r.reference.value,
                name,
                v.estimate,
                v.n,
                v.q1,
                v.q3,
                v.ci_low,
                v.ci_high,
            )
            for r in rows
            for name, v in r.values.items()
        ),
    )
    return table.csv()


def write_main_table(rows: Sequence[MainRow], folder: Path, seed: int, resamples: int) -> None:
    """Write the main table alone: Markdown, CSV and ``results.json``."""
    write_tables(folder, rows, [], [], {"seed": seed, "resamples": resamples})


def write_tables(
    folder: Path,
    rows: Sequence[MainRow],
    tables: Sequence[Table],
    figures: Sequence[Figure],
    settings: dict[str, Any],
) -> None:
    """Write the main table, every table as CSV and in one Markdown file, and ``results.json``.

    Every file is written atomically.
    """
    io.write_text(folder / MAIN_MD, markdown(rows))
    io.write_text(folder / MAIN_CSV, table_csv(rows))
    all_tables = [*main_tables(rows), *tables]
    for table in all_tables:
        io.write_text(folder / TABLES_DIR / f"{table.key}.csv", table.csv())
    text = "\n".join(t.markdown() for t in all_tables)
    text += "".join(f"\n## {f.title}\n\n![{f.title}]({f.file})\n" for f in figures)
    io.write_text(folder / REPORT_MD, text)
    io.write_json(
        folder / RESULTS_JSON,
        {
            "schema_version": RESULTS_SCHEMA_VERSION,
            "bootstrap": {
                "resamples": settings["resamples"],
                "seed": settings["seed"],
                "unit": "conversation",
            },
            **{k: v for k, v in settings.items() if k not in ("seed", "resamples")},
            "main_table": [r.to_dict() for r in rows],
            "tables": [t.to_dict() for t in tables],
            "figures": [f.to_dict() for f in figures],
        },
    )
