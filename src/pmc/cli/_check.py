"""``pmc check``: a run against the bounds and regressions of a checks file, for CI."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from pmc import io
from pmc.check import CheckResult, junit_xml, read_checks, run_checks
from pmc.cli._ui import out, resamples_option, seed_option
from pmc.errors import PmcError

CANNOT_CHECK = 3
"""The exit status when the run cannot be checked at all (1: a check failed; 2: usage)."""
JUNIT_FILE = "checks.junit.xml"


class _CannotCheck(click.ClickException):
    exit_code = CANNOT_CHECK


@click.command("check")
@click.argument("run", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--checks",
    "checks_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    required=True,
    help="The checks file (TOML): [[bound]] and [[regression]] entries.",
)
@click.option(
    "--baseline",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="The baseline run for regressions (default: the checks file's baseline).",
)
@click.option(
    "--junit",
    type=click.Path(dir_okay=False, path_type=Path),
    help=f"Where to write the JUnit XML (default: RUN/{JUNIT_FILE}, or beside results.json).",
)
@seed_option
@resamples_option
def check_command(
    run: Path,
    checks_file: Path,
    baseline: Path | None,
    junit: Path | None,
    seed: int,
    resamples: int,
) -> None:
    """Check a scored run (or its report's results.json) against a checks file.

    Bounds hold each system's main-table numbers within limits (hold rate at pauses at least
    0.5, median turn-end latency at most 1 s, no failed rollouts); regressions pair the run
    with a baseline run on the same points and fail where a measure got worse beyond the
    margin with a 95% bootstrap interval that excludes no change. Prints a table of every
    check, writes JUnit XML for CI, and exits 0 when all pass, 1 when any fails, and 3 when
    the run cannot be checked (not scored, another baseline's points, a bad checks file).
    """
    try:
        checks = read_checks(checks_file)
        with out.status("checking"):
            subject, results = run_checks(run, checks, baseline, seed, resamples)
    except PmcError as exc:  # CannotCheck, or a checks file that cannot be read
        raise _CannotCheck(str(exc)) from None
    show_checks(results)
    folder = run.parent if run.is_file() else run
    path = junit or folder / JUNIT_FILE
    io.write_text(path, junit_xml(results, f"pmc check {subject.label}"))
    failed = sum(r.outcome.fails for r in results)
    out.print(f"{len(results) - failed} passed, {failed} failed; JUnit: {path}", soft_wrap=True)
    if failed:
        raise SystemExit(1)


def show_checks(results: list[CheckResult]) -> None:
    """One row per check: what it asked of which system, its verdict and its numbers."""
    table = Table(title="Checks", title_justify="left")
    for name in ("check", "system", "kind", "outcome", "numbers"):
        table.add_column(name)
    for r in results:
        style = "green" if not r.outcome.fails else "red"
        table.add_row(
            f"{r.check}: {r.name}",
            r.system,
            "-" if r.kind is None else r.kind.value,
            f"[{style}]{r.outcome.value}[/{style}]",
            r.message,
        )
    out.print(table)
