"""``pmc labels`` and ``pmc select``: the rule engine, the inventory, and liveliness selection."""

from __future__ import annotations

from pathlib import Path

import click

from pmc.asr import DEFAULT_ASR
from pmc.cli._ui import command_line, err, next_step, out, progress_bar, workdir_option
from pmc.labels import (
    INVENTORY_FIGURE,
    LIVELINESS_CUTOFF,
    Inventory,
    LabelRun,
    Selection,
    inventory_markdown,
    labels_dir,
    load_projector,
    run_labels,
    run_selection,
    selection_table_markdown,
    write_inventory,
)


@click.command("labels")
@workdir_option
@click.option(
    "--asr",
    default=DEFAULT_ASR,
    show_default=True,
    help="Gap-fill recogniser, ENGINE:MODEL (MODEL: tiny.en, a model folder, or a hub name), "
    "or 'none' to skip gap fill.",
)
@click.option(
    "--vap-projector",
    metavar="MODULE:CLASS",
    help="A voice-activity projection plug-in (a pmc.labels.Projector) for the review flags.",
)
def labels_command(workdir: Path, asr: str, vap_projector: str | None) -> None:
    """Label every conversation: turns, pauses, backchannels, overlaps, turn ends, flags.

    Writes WORKDIR/labels/<conversation>.json and the label inventory (inventory.md, .csv,
    .json and inventory.png). Conversations already labelled with the same input and settings are
    kept as they are.
    """
    projector = load_projector(vap_projector) if vap_projector else None
    with progress_bar("labelling") as start:
        run = run_labels(
            workdir, asr=None if asr == "none" else asr, projector=projector, progress=start
        )
    show_labels(workdir, run, write_inventory(workdir))


def show_labels(workdir: Path, run: LabelRun, inv: Inventory) -> None:
    """What the label stage did, its inventory, and the next step."""
    err.print(
        f"labelled {len(run.labelled)}, unchanged {len(run.reused)}, "
        f"gap-fill words {run.gap_fill_words}"
    )
    folder = labels_dir(workdir)
    out.print(inventory_markdown(inv), markup=False, soft_wrap=True)
    out.print(f"labels in {folder}; figure {folder / INVENTORY_FIGURE}", soft_wrap=True)
    next_step(
        command_line("pmc", "select", "--workdir", workdir), why="keep the lively conversations"
    )


@click.command("select")
@workdir_option
@click.option(
    "--cutoff",
    type=click.FloatRange(0.0, 1.0),
    default=LIVELINESS_CUTOFF,
    show_default=True,
    help="Keep conversations whose liveliness score (mean percentile rank) is at least this.",
)
def select_command(workdir: Path, cutoff: float) -> None:
    """Select lively conversations by six traits of their labels (paper section 3.1).

    Writes WORKDIR/labels/selection.json, .md and .csv with every trait, rank and score.
    """
    show_selection(workdir, run_selection(workdir, cutoff), cutoff)


def show_selection(workdir: Path, selection: Selection, cutoff: float) -> None:
    """The selection table, how many were kept, and the next step."""
    folder = labels_dir(workdir)
    out.print(selection_table_markdown(selection), markup=False, soft_wrap=True)
    out.print(
        f"{len(selection.selected_ids)} of {len(selection.rows)} conversations selected "
        f"(score >= {cutoff}); table in {folder / 'selection.md'}",
        soft_wrap=True,
    )
    next_step(command_line("pmc", "points", "--workdir", workdir), why="build the point set")
