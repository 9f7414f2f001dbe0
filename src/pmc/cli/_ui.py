"""Terminal output shared by the commands: a console, progress bars, summary tables."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from pmc.gate import DEFAULT_ONSET, OnsetRule
from pmc.progress import Advance, Start
from pmc.report import RESAMPLES

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

systems_dir_option = click.option(
    "--systems-dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="A folder of your own system cards, found by name beside the bundled ones; a card "
    "named like a bundled one replaces it, with a warning ('pmc systems list' shows them all).",
)


seed_option = click.option(
    "--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap resampling."
)


resamples_option = click.option(
    "--resamples",
    type=click.IntRange(min=1),
    default=RESAMPLES,
    show_default=True,
    help="Bootstrap resamples of conversations (paper appendix E: 2,000).",
)


def onset_option(help: str) -> Callable[[Callable[..., object]], Callable[..., object]]:
    """``--onset`` as ``pmc score`` and ``pmc calibrate-gate`` take it, with its own ``help``.

    Scores' rule by default (:data:`pmc.gate.DEFAULT_ONSET`); the command gets the rule.
    """
    return click.option(
        "--onset",
        type=click.Choice([rule.value for rule in OnsetRule]),
        default=DEFAULT_ONSET.value,
        show_default=True,
        callback=lambda _ctx, _param, value: OnsetRule(value),
        help=help,
    )


def warn(message: str) -> None:
    """A warning on standard error, one line."""
    err.print(f"warning: {message}", soft_wrap=True, markup=False)


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


def command_line(*words: str | Path) -> str:
    """One shell command from its words, each quoted only where the shell needs it."""
    return " ".join(shlex.quote(str(w)) for w in words)


QUIET_NEXT = "pmc.quiet_next_step"
"""Set in the click context's shared ``meta`` by a command that runs the stages itself
(``pmc demo``), so that only its own last hint is printed."""


def next_step(*commands: str, why: str = "") -> None:
    """Tell the user what to run next, at the end of a stage (one or more whole commands)."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None and ctx.meta.get(QUIET_NEXT):
        return
    err.print(f"next{f' ({why})' if why else ''}:", soft_wrap=True, markup=False)
    for command in commands:
        err.print(f"  {command}", soft_wrap=True, markup=False)


@contextmanager
def byte_progress_bar() -> Iterator[Callable[[str, int], Callable[[int], None]]]:
    """Byte progress bars on standard error, one per file; yields ``start(what, total) -> advance``.

    ``advance(n)`` adds ``n`` bytes to that file's bar (the shape of ``pmc.hub.ByteStart``).
    The bars appear with the first file, so a command that fails before one prints only its error.
    """
    with ExitStack() as stack:
        bars: list[Progress] = []

        def start(what: str, total: int) -> Callable[[int], None]:
            if not bars:
                bars.append(
                    stack.enter_context(
                        Progress(
                            TextColumn("{task.description}"),
                            BarColumn(),
                            DownloadColumn(),
                            TransferSpeedColumn(),
                            TimeRemainingColumn(),
                            console=err,
                            transient=False,
                        )
                    )
                )
            progress = bars[0]
            task = progress.add_task(what, total=total)
            return lambda n: progress.advance(task, n)

        yield start
