"""``pmc demo``: the main job on the bundled demo corpus, offline (what ``make demo`` runs)."""

from __future__ import annotations

from pathlib import Path

import click

from pmc.cli._corpus import import_demo_corpus, info
from pmc.cli._labels import labels_command, select_command
from pmc.cli._points import points_command
from pmc.cli._report import report_command
from pmc.cli._run import load_cards, run_command
from pmc.cli._score import score_command
from pmc.cli._ui import QUIET_NEXT, command_line, next_step, systems_dir_option
from pmc.demo import script_paths
from pmc.harness import Run, runs_dir
from pmc.scoring import embedding_model_path
from pmc.systems import Family, SystemCard, adapter_factory, extra_installed

DEMO_RUN = "demo"
DEMO_ASR = "faster-whisper:tiny.en"
"""The demo scores with the fast bundled model (Whisper base, the default, takes twice as long)."""
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
    run_id = DEMO_RUN if conversations is None else f"{DEMO_RUN}-{conversations}"
    import_demo_corpus(workdir, conversations=conversations)
    ctx.invoke(info, workdir=workdir, per_conversation=True)
    ctx.invoke(labels_command, workdir=workdir)
    # The ten demo conversations were all written to be lively; the paper's 0.75 cutoff ranks
    # Seamless's 1,395 and would keep one or two of ten, so the demo keeps them all.
    ctx.invoke(select_command, workdir=workdir, cutoff=0.0)
    ctx.invoke(points_command, workdir=workdir)
    local = [c.name for c in load_cards(("all",), systems_dir) if _in_demo(c)]
    ctx.invoke(
        run_command,
        workdir=workdir,
        systems=tuple(local),
        systems_dir=systems_dir,
        run_id=run_id,
    )
    run_dir = runs_dir(workdir) / run_id
    ctx.invoke(score_command, run_dir=run_dir, asr=DEMO_ASR)
    ctx.invoke(report_command, run_dir=run_dir)
    ctx.meta[QUIET_NEXT] = False
    index = Run(run_dir).report_dir / "index.html"
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
