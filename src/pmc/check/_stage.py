"""``pmc check``'s work: read the run (or its ``results.json``) and its baseline, then judge."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pmc import io
from pmc.check._evaluate import CannotCheck, CheckResult, check_bounds, check_regressions
from pmc.check._spec import Checks
from pmc.harness import RUN_FILE, Run
from pmc.points import PointKind
from pmc.report import RESULTS_JSON, RunData, load_run, main_table


@dataclass(frozen=True)
class Subject:
    """What is checked: the main table's rows, and the run's scores where a run was given.

    Attributes:
        label: The run's id (or the results file's path).
        rows: The main table's rows as ``results.json`` holds them.
        data: The run's scores (None when only ``results.json`` was given).
        points: The run's points manifest digest (None without a run).
    """

    label: str
    rows: list[Mapping[str, Any]]
    data: RunData | None = None
    points: str | None = None


def read_subject(path: Path, seed: int, resamples: int) -> Subject:
    """A run folder (its scores, the main table computed) or a report's ``results.json``."""
    if path.is_file():
        try:
            rows = [_row(r) for r in io.read_json(path)["main_table"]]
        except (ValueError, KeyError, TypeError) as exc:
            raise CannotCheck(f"{path}: not a report's {RESULTS_JSON} ({exc!r})") from None
        return Subject(str(path), rows)
    if not (path / RUN_FILE).is_file():
        raise CannotCheck(f"{path}: neither a run folder (no {RUN_FILE}) nor a {RESULTS_JSON}")
    data = load_run(path)
    unscored = [s for s in data.unscored if data.references[s] is None]
    if unscored:
        raise CannotCheck(
            f"{path}: {', '.join(unscored)} not scored: run `pmc score --run {path}` first"
        )
    rows = [r.to_dict() for r in main_table(data, seed, resamples)]
    return Subject(data.run_id, rows, data, Run(path).record.points_manifest_sha256)


def _row(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """A main-table row as results.json holds it, its fields checked (KeyError, ValueError)."""
    PointKind(row["kind"])
    if not isinstance(row["system"], str) or not isinstance(row["values"], dict):
        raise TypeError("a row's system must be a string and its values an object")
    if not all(isinstance(row[k], int) for k in ("failed", "no_audio")):
        raise TypeError("a row's failed and no_audio must be counts")
    return row


def run_checks(
    path: Path, checks: Checks, baseline: Path | None, seed: int, resamples: int
) -> tuple[Subject, list[CheckResult]]:
    """Every check of ``checks`` on the run at ``path``; regressions against ``baseline``.

    ``baseline`` (the command line's) wins over the checks file's. Raises :class:`CannotCheck`
    where the run cannot be checked: no scores, no baseline for a regression, or a baseline on
    other points.
    """
    subject = read_subject(path, seed, resamples)
    results = check_bounds(subject.rows, checks.bounds)
    if checks.regressions:
        base_path = baseline or checks.baseline
        if base_path is None:
            raise CannotCheck(
                f"{checks.path}: regressions need a baseline run (baseline = ... in the file, "
                "or --baseline)"
            )
        if subject.data is None:
            raise CannotCheck(
                f"{path}: a regression pairs points, so it needs the run folder, not its "
                f"{RESULTS_JSON}"
            )
        base = read_subject(base_path, seed, resamples)
        if base.data is None or base.points != subject.points:
            raise CannotCheck(
                f"{path} and the baseline {base_path} are not on the same points (points "
                f"manifest {str(subject.points)[:12]} against {str(base.points)[:12]}): a "
                "regression pairs them point by point"
            )
        results += check_regressions(subject.data, base.data, checks.regressions, seed, resamples)
    return subject, results
