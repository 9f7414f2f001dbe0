"""The leaderboard's rows: each system of each run, read from the run's ``results.json``.

A row is placed beside another only when both were measured on the same points with the same
score settings (their ``provenance``); otherwise they go in separate groups, and each group
after the first says what differs from the first (docs/architecture.md "Leaderboard").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pmc import io
from pmc.errors import InputError
from pmc.provenance import digest
from pmc.report import RESULTS_JSON

LEADERBOARD_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Column:
    """A measure shown for every row: a main-table value of one point kind."""

    key: str
    label: str
    kind: str
    metric: str
    flip: bool = False
    """Show 1 - the value (hold rate from the takeover share), the interval turned over."""


COLUMNS = (
    Column("hold", "hold rate at pauses", "pause", "takeover", flip=True),
    Column("latency_s", "turn-end latency, s", "turn_end", "latency_s"),
    Column("duration_ratio", "duration ratio", "turn_end", "duration_ratio"),
    Column("cosine", "similarity", "turn_end", "cosine"),
    Column("recall", "conversation recall", "conversation_recall", "strict"),
)


@dataclass(frozen=True)
class Cell:
    """One value with its 95% interval (None where nothing qualified or nothing was run)."""

    estimate: float | None = None
    low: float | None = None
    high: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {"estimate": self.estimate, "ci_low": self.low, "ci_high": self.high}

    @property
    def text(self) -> str:
        """``0.63 [0.57, 0.67]``, or ``-``."""
        if self.estimate is None:
            return "-"
        if self.low is None or self.high is None:
            return f"{self.estimate:.2f}"
        return f"{self.estimate:.2f} [{self.low:.2f}, {self.high:.2f}]"


@dataclass(frozen=True)
class Entry:
    """One system of one run.

    Attributes:
        run_id: The run.
        system: The system card's name.
        reference: Its reference role, if it is a reference system.
        report: The run's report page.
        points: The run's points manifest digest (None: not recorded).
        settings: The system's score settings (None: not recorded).
        cells: Each column's value, by column key.
        failed: Points whose rollout 0 failed, over every kind.
    """

    run_id: str
    system: str
    reference: str | None
    report: Path
    points: str | None
    settings: dict[str, Any] | None
    cells: dict[str, Cell] = field(default_factory=dict)
    failed: int = 0

    @property
    def comparable(self) -> tuple[str | None, str | None]:
        """What must match for two rows to sit side by side: the points and the settings."""
        return self.points, None if self.settings is None else digest(self.settings)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "run_id": self.run_id,
            "system": self.system,
            "reference": self.reference,
            "report": str(self.report),
            "points_manifest_sha256": self.points,
            "score_settings": self.settings,
            "values": {k: c.to_dict() for k, c in self.cells.items()},
            "failed": self.failed,
        }


@dataclass(frozen=True)
class Group:
    """Rows measured alike, and how they differ from the first group (empty for the first)."""

    entries: tuple[Entry, ...]
    differs: tuple[str, ...] = ()


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def _cell(row: dict[str, Any], column: Column) -> Cell:
    value = row["values"].get(column.metric) or {}
    estimate, low, high = (_number(value.get(k)) for k in ("estimate", "ci_low", "ci_high"))
    if not column.flip:
        return Cell(estimate, low, high)
    return Cell(_turned(estimate), _turned(high), _turned(low))


def _turned(value: float | None) -> float | None:
    return None if value is None else 1.0 - value


def read_entries(run_dir: Path) -> list[Entry]:
    """Every system of a run, from its report's ``results.json``.

    Raises:
        InputError: The run has no report, or its ``results.json`` cannot be read.
    """
    path = run_dir / "report" / RESULTS_JSON
    if not path.is_file():
        raise InputError(path, f"no report: run `pmc report --run {run_dir}` first")
    try:
        return _entries(path, io.read_json(path))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(path, f"not a report's {RESULTS_JSON} ({exc!r})") from None


def _entries(path: Path, results: dict[str, Any]) -> list[Entry]:
    run_id = str(results["run_id"])
    made = results.get("provenance") or {}
    systems = made.get("systems") or {}
    by_system: dict[str, list[dict[str, Any]]] = {}
    for row in results["main_table"]:
        by_system.setdefault(str(row["system"]), []).append(row)
    return [
        Entry(
            run_id,
            name,
            mine[0].get("reference"),
            path.parent / "index.html",
            made.get("points_manifest_sha256"),
            (systems.get(name) or {}).get("score_settings"),
            {c.key: _cell(r, c) for r in mine for c in COLUMNS if c.kind == r["kind"]},
            sum(int(r["failed"]) for r in mine),
        )
        for name, mine in by_system.items()
    ]


def grouped(entries: Sequence[Entry]) -> list[Group]:
    """Rows measured alike together, in the order their first row came; what differs, said."""
    keys: dict[tuple[str | None, str | None], list[Entry]] = {}
    for entry in entries:
        keys.setdefault(entry.comparable, []).append(entry)
    groups = list(keys.values())
    first = groups[0][0] if groups else None
    return [
        Group(tuple(g), () if first is None or i == 0 else _differences(first, g[0]))
        for i, g in enumerate(groups)
    ]


def _differences(first: Entry, other: Entry) -> tuple[str, ...]:
    out = []
    if first.points != other.points:
        out.append(f"points: manifest {_short(other.points)} (first group: {_short(first.points)})")
    if first.settings is None or other.settings is None:
        if first.settings != other.settings:
            out.append(
                "score settings: not recorded for one of them (a report made before "
                "pmc recorded its provenance)"
            )
        return tuple(out)
    for key in sorted(set(first.settings) | set(other.settings)):
        mine, theirs = other.settings.get(key), first.settings.get(key)
        if mine != theirs:
            out.append(f"score setting {key}: {mine} (first group: {theirs})")
    return tuple(out)


def _short(value: str | None) -> str:
    return "not recorded" if value is None else value[:12]
