"""``pmc demo``: the main job on the bundled demo corpus, offline (what ``make demo`` runs).

The work is one library call (:func:`pmc.pipeline.run_demo_pipeline`); this prints each stage's
outcome as its own command does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from pmc.cli._corpus import info, report_skip, show_import
from pmc.cli._curve import show_curve
from pmc.cli._labels import show_labels, show_selection
from pmc.cli._points import show_points
from pmc.cli._report import show_report
from pmc.cli._run import load_cards, show_rollouts
from pmc.cli._score import show_scores
from pmc.cli._ui import QUIET_NEXT, command_line, next_step, progress_bar, systems_dir_option
from pmc.demo import script_paths
from pmc.harness import runs_dir
from pmc.pipeline import DEMO_CUTOFF, PipelineHooks, Stage, demo_run_id, run_demo_pipeline
from pmc.scoring import embedding_model_path
from pmc.systems import Family, SystemCard, adapter_factory, extra_installed

WITH_EXTRA = ("smart-turn",)
"""Cards that need an optional extra and join the demo where it is installed (``make demo``
installs ``pipecat``): a trained turn model beside the silence endpointers."""


@click.command()
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("demo-work"),
    show_default=True,
    help="Working directory for the demo.",
)
@systems_dir_option
@click.option(
    "--conversations",
    type=click.IntRange(min=1, max=len(script_paths())),
    help="Only the first N of the demo's conversations, in the run WORKDIR/runs/demo-N: a "
    "quicker check of every stage. Give it a working directory of its own (one keeps what it "
    "imported before).",
)
@click.pass_context
def demo(
    ctx: click.Context, workdir: Path, systems_dir: Path | None, conversations: int | None
) -> None:
    """Run every stage on the bundled demo corpus, offline.

    Corpus, labels, selection, points, then rollouts of every local system (the reference
    systems and the endpointer cascades, and Pipecat's smart-turn where the pipecat extra is
    installed) in the run WORKDIR/runs/demo, their scores, and the report, whose path it
    prints last.
    """
    # Scoring needs the embedding model, installed apart (README "Install"): say so now, not
    # after minutes of the earlier stages.
    embedding_model_path()
    ctx.meta[QUIET_NEXT] = True  # each stage's own hint names the stage the demo runs next
    cards = [c for c in load_cards(("all",), systems_dir) if _in_demo(c)]
    run_dir = runs_dir(workdir) / demo_run_id(conversations)

    def done(stage: Stage, result: Any) -> None:
        """Print each stage's outcome as its own command does."""
        if stage is Stage.CORPUS:
            show_import(result, workdir)
            ctx.invoke(info, workdir=workdir, per_conversation=True)
        elif stage is Stage.LABELS:
            show_labels(workdir, *result)
        elif stage is Stage.SELECTION:
            show_selection(workdir, result, DEMO_CUTOFF)
        elif stage is Stage.POINTS:
            show_points(workdir, *result)
        elif stage is Stage.ROLLOUTS:
            show_rollouts(workdir, run_dir.name, result)
        elif stage is Stage.SCORES:
            show_scores(run_dir, result)
        elif stage is Stage.CURVE:
            show_curve(result)
        else:
            show_report(result)

    hooks = PipelineHooks(progress_bar, report_skip, done)
    index = run_demo_pipeline(workdir, cards, conversations, hooks)
    ctx.meta[QUIET_NEXT] = False
    next_step(
        command_line("python", "-m", "webbrowser", index.resolve().as_uri()),
        command_line("pmc", "systems", "list"),
        why="open the report; then choose a system of your own to put at the same points "
        f"with 'pmc run --workdir {workdir} --system NAME'",
    )


def _in_demo(card: SystemCard) -> bool:
    """Local systems that need no key nor extra, and :data:`WITH_EXTRA` where it is there."""
    if card.family is not Family.LOCAL or card.api_key_env:
        return False
    extra = adapter_factory(card).EXTRA
    if extra is None:
        return True
    if card.name not in WITH_EXTRA:
        return False
    if not extra_installed(extra):
        click.echo(f"{card.name}: skipped, it needs the {extra} extra (pip install 'pmc[{extra}]')")
        return False
    return True
