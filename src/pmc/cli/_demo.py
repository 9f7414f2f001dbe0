"""``pmc demo``: the main job on the bundled demo corpus, offline (what ``make demo`` runs)."""

from __future__ import annotations

from pathlib import Path

import click

from pmc.cli._corpus import import_demo_corpus, info
from pmc.cli._labels import labels_command, select_command
from pmc.cli._ui import out

NEXT_STAGES = ("points", "rollouts", "scores", "report")
"""Stages of the pipeline (DESIGN "The pipeline") not yet built into the demo."""


@click.command()
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("demo-work"),
    show_default=True,
    help="Working directory for the demo.",
)
@click.pass_context
def demo(ctx: click.Context, workdir: Path) -> None:
    """Run every stage built so far on the bundled demo corpus, offline."""
    import_demo_corpus(workdir)
    ctx.invoke(info, workdir=workdir, per_conversation=True)
    ctx.invoke(labels_command, workdir=workdir)
    ctx.invoke(select_command, workdir=workdir)
    out.print(f"demo ready in {workdir}")
    out.print("stages still to come: " + " -> ".join(NEXT_STAGES))
