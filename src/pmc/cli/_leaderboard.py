"""``pmc leaderboard``: many runs' reports in one sortable page, with CSV and JSON."""

from __future__ import annotations

from pathlib import Path

import click

from pmc.cli._ui import command_line, next_step, out, warn
from pmc.leaderboard import PAGE, build_leaderboard


@click.command("leaderboard")
@click.argument(
    "runs", nargs=-1, required=True, type=click.Path(file_okay=False, exists=True, path_type=Path)
)
@click.option(
    "--out",
    "folder",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("leaderboard"),
    show_default=True,
    help="Where to write index.html, leaderboard.csv and leaderboard.json.",
)
def leaderboard_command(runs: tuple[Path, ...], folder: Path) -> None:
    """Put the systems of many reported runs side by side (run `pmc report` on each first).

    One row per system per run, each value with its 95% interval, in a page that opens from
    disk and sorts by any column, each run linked to its report. Rows share a table only when
    they were measured on the same points with the same score settings; otherwise the page
    groups them and says what differs. A run without a report is left out, saying why.
    """
    board = build_leaderboard(list(runs), folder)
    for problem in board.skipped:
        warn(f"left out: {problem}")
    rows = sum(len(g.entries) for g in board.groups)
    out.print(
        f"{rows} rows from {len(runs) - len(board.skipped)} runs in {len(board.groups)} "
        f"group(s); {len(board.skipped)} run(s) left out",
        soft_wrap=True,
    )
    index = folder / PAGE
    out.print(f"leaderboard: {index}", soft_wrap=True)
    next_step(
        command_line("python", "-m", "webbrowser", index.resolve().as_uri()),
        why="open it in a browser; it needs no server",
    )
