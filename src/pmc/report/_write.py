"""The report's tables on disk: Markdown to read, CSV to load, JSON for machines (versioned)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pmc import io
from pmc.conditions import Condition
from pmc.points import PointKind
from pmc.report._aggregate import Value, cell
from pmc.report._heading import headed
from pmc.report._main import MainRow
from pmc.report._summary import SUMMARY_KEY, Summary
from pmc.table import Cell, Figure, Table

RESULTS_SCHEMA_VERSION = 3
"""3: the summary that leads the report (``summary``)."""
MAIN_MD = "main_table.md"
MAIN_CSV = "main_table.csv"
REPORT_MD = "report.md"
RESULTS_JSON = "results.json"
TABLES_DIR = "tables"
ROLLOUTS_USED = (
    "Rollouts: every table and figure reads rollout 0 of each point (paper section 3.4), except "
    "the rollout-to-rollout agreement table, which reads all of a point's rollouts."
)
"""Which rollouts the report reads, said once at its top."""


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


def _per_kind(
    rows: Sequence[MainRow], key: str, title: str, value: Callable[[Value], str], note: str = ""
) -> list[Table]:
    """One table per point kind (never pooled), a row per system, each metric by ``value``.

    ``title`` is formatted with ``kind`` (its name) and ``history`` (the recall history, or
    nothing for the other kinds).
    """
    out = []
    for kind in dict.fromkeys(r.kind for r in rows):
        mine = [r for r in rows if r.kind is kind]
        names = list(mine[0].values)
        history = " (120 s of history)" if "strict" in names else ""
        body: tuple[tuple[Cell, ...], ...] = tuple(
            (
                _system(r),
                r.points,
                r.no_audio,
                r.untranscribed,
                r.failed,
                *(value(r.values[n]) for n in names),
            )
            for r in mine
        )
        out.append(
            Table(
                f"{key}_{kind.value}",
                title.format(kind=_kind_name(kind), history=history),
                ("system", "points", "no audio", "heard, no words", "failed", *names),
                body,
                note,
            )
        )
    return out


def main_tables(rows: Sequence[MainRow]) -> list[Table]:
    """Per point kind (never pooled): Table 3's values, then Table 14's intervals."""
    values = _per_kind(
        rows,
        "main",
        "Main table: {kind} points{history} (paper Table 3)",
        spread,
        "Rates over rollouts; medians (interquartile range) over rollouts with words. "
        "Reference rows are named by their role.",
    )
    cis = _per_kind(
        rows,
        "intervals",
        "95% bootstrap intervals: {kind} points (paper Table 14)",
        interval,
        "Conversations resampled with replacement.",
    )
    return [table for pair in zip(values, cis, strict=True) for table in pair]


def markdown(rows: Sequence[MainRow], conditions: Sequence[Condition] = ()) -> str:
    """The main table per point kind: estimate and interval in each cell.

    Each kind's title names the run's ``conditions``, where it ran under any.
    """
    tables = headed(_per_kind(rows, "main", "{kind}", cell), conditions)
    return "\n".join(t.markdown() for t in tables)


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
    summary: Summary | None = None,
    summary_figure: Figure | None = None,
    conditions: Sequence[Condition] = (),
) -> list[Table]:
    """Write the main table, every table as CSV and in one Markdown file, and ``results.json``.

    ``report.md`` leads with the summary (its figure, then its table) where there is one.
    Every file is written atomically. Returns every table as written: the main table's first
    (the summary's table is not among them). The tables made here (the main table's, the
    summary's) name the run's ``conditions`` in their titles; the caller's already do.
    """
    io.write_text(folder / MAIN_MD, markdown(rows, conditions))
    io.write_text(folder / MAIN_CSV, table_csv(rows))
    all_tables = [*headed(main_tables(rows), conditions), *tables]
    lead = [] if summary is None else headed([summary.table()], conditions)
    for table in [*lead, *all_tables]:
        io.write_text(folder / TABLES_DIR / f"{table.key}.csv", table.csv())
    parts = [ROLLOUTS_USED + "\n"]
    parts += [] if summary_figure is None else [summary_figure.markdown()]
    parts += [t.markdown() for t in [*lead, *all_tables]]
    text = "\n".join(parts)
    text += "".join("\n" + f.markdown() for f in figures)
    io.write_text(folder / REPORT_MD, text)
    lead_json: dict[str, Any] = {}
    if summary is not None:
        lead_json[SUMMARY_KEY] = {
            **summary.to_dict(),
            "figure": None if summary_figure is None else summary_figure.to_dict(),
        }
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
            **lead_json,
            "main_table": [r.to_dict() for r in rows],
            "tables": [t.to_dict() for t in tables],
            "figures": [f.to_dict() for f in figures],
        },
    )
    return all_tables
