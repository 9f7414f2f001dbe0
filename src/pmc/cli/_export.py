"""``pmc export``: a scored run in the layouts of other projects' scorers (docs/exports.md)."""

from __future__ import annotations

from pathlib import Path

import click

from pmc.cli._ui import out as console
from pmc.cli._ui import progress_bar, warn
from pmc.export import (
    GOLD_FILE,
    INDEX_FILE,
    PREDICTIONS_DIR,
    Exported,
    export_fdb,
    export_turnbench,
)

_run_argument = click.argument("run", type=click.Path(file_okay=False, exists=True, path_type=Path))
_out_argument = click.argument("out", type=click.Path(file_okay=False, path_type=Path))
_rollout_option = click.option(
    "--rollout",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Which rollout of each point to export (0: the first).",
)


@click.group("export")
def export() -> None:
    """Write a scored run's rollouts in another benchmark's layout, for that project's scorer.

    OUT is made afresh (an earlier export there is replaced). What each field holds, and how the
    peers' definitions differ from pmc's, is in docs/exports.md.
    """


@export.command("fdb")
@_run_argument
@_out_argument
@_rollout_option
def fdb_command(run: Path, out: Path, rollout: int) -> None:
    """Full-Duplex-Bench v1: a sample folder per rollout, by system and task.

    OUT/<system>/<task>/<n>/ holds input.wav and output.wav (16 kHz mono, from the start of the
    live stream), output.json (the output's words with their times) and the task's annotation:
    pause.json at pauses (pause_handling), turn_taking.json at turn ends (smooth_turn_taking),
    interrupt.json at barge-ins (user_interruption). OUT/index.json names each folder's point.
    Recall and backchannel points have no FDB task and are left out.
    """
    with progress_bar("exporting") as start:
        done = export_fdb(run, out, rollout, start)
    _report(done, f"samples; which point each holds: {done.folder / INDEX_FILE}")


@export.command("turnbench")
@_run_argument
@_out_argument
@_rollout_option
def turnbench_command(run: Path, out: Path, rollout: int) -> None:
    """TurnBench: each system's end-of-turn decisions as predictions, and pmc's labels as gold.

    OUT/predictions/<system>.json has one entry per pause and turn-end point (its id is the
    point's), with the onsets of the system's talk on the conversation's clock as end-of-turn
    commit times on the listened-to speaker's channel; OUT/gold.json holds each point's own
    event (a turn end, or a pause as a negative span) in the shape of TurnBench's exported gold.
    """
    with progress_bar("exporting") as start:
        done = export_turnbench(run, out, rollout, start)
    _report(
        done,
        f"points' decisions in {done.folder / PREDICTIONS_DIR}; gold: {done.folder / GOLD_FILE}",
    )


def _report(done: Exported, what: str) -> None:
    for line in done.skipped:
        warn(f"left out: {line}")
    per_system = ", ".join(f"{s} {n}" for s, n in sorted(done.counts.items()))
    console.print(f"{sum(done.counts.values())} {what}", soft_wrap=True)
    console.print(
        f"by system: {per_system or 'none'}; {len(done.skipped)} left out", soft_wrap=True
    )
