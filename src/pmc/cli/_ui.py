"""Terminal output shared by the commands: a console, progress bars, summary tables."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from pmc.progress import Advance, Start

out = Console(highlight=False)
"""Results (tables) go to standard output."""
err = Console(stderr=True, highlight=False)
"""Messages and progress go to standard error."""

workdir_option = click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Working directory that every stage reads from and writes to.",
)

ray_option = click.option(
    "--ray",
    "ray_address",
    is_flag=False,
    flag_value="auto",
    default=None,
    metavar="[ADDRESS]",
    help="Spread the work over a Ray cluster: ADDRESS (HOST:PORT), or, given alone, the "
    "cluster this machine belongs to, else a new local one with a process per core "
    "(needs pip install 'pmc[ray]'; docs/scaling.md).",
)


@contextmanager
def progress_bar(description: str) -> Iterator[Start]:
    """A progress bar on standard error; yields ``start(total) -> advance``."""
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    ) as progress:

        def start(total: int) -> Advance:
            task = progress.add_task(description, total=total)
            return lambda: progress.advance(task)

        yield start


def hours(seconds: float) -> str:
    """Seconds as hours and minutes, ``1 h 05 min``, or minutes and seconds below an hour."""
    if seconds >= 3600:
        return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"
    return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"
