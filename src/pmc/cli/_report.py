"""``pmc report``: the paper's tables and figures of a scored run, and a listenable HTML report."""

from __future__ import annotations

from pathlib import Path

import click

from pmc.cli._ui import command_line, next_step, out, resamples_option, seed_option
from pmc.report import build_report

_RUN = click.Path(file_okay=False, exists=True, path_type=Path)


@click.command("report")
@click.option(
    "--run", "run_dir", type=_RUN, required=True, help="The scored run, WORKDIR/runs/RUN_ID."
)
@click.option(
    "--compare",
    type=_RUN,
    help=(
        "A second scored run: each system in both is compared on the points they share; a twin "
        "(another history, or other conditions) adds the paired ablation or condition table."
    ),
)
@seed_option
@resamples_option
@click.option(
    "--out",
    "folder",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where to write the report (default: RUN/report).",
)
def report_command(
    run_dir: Path, compare: Path | None, seed: int, resamples: int, folder: Path | None
) -> None:
    """Write the report of a scored run (run `pmc score` first).

    RUN/report/ gets the main table per point kind with 95% bootstrap intervals over
    conversations (main_table.md/.csv), every extended analysis (tables/*.csv, report.md),
    the figures (figures/*.png), results.json, and index.html: a static site that opens from
    disk, with a page per rollout to read its timeline and listen to it.
    """
    with out.status("writing the report"):
        index = build_report(run_dir, compare, seed, resamples, folder)
    show_report(index)


def show_report(index: Path) -> None:
    """Where the report is (the last line on standard output), and how to open it."""
    out.print(f"report: {index}", soft_wrap=True)
    next_step(
        command_line("python", "-m", "webbrowser", index.resolve().as_uri()),
        why="open it in a browser; it needs no server",
    )
