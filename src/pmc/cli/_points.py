"""``pmc points``: filters, ranking, draw, recall questions, identity prompts and audio cuts."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from pmc.cli._ui import command_line, next_step, out, progress_bar, warn, workdir_option
from pmc.llm import create_client
from pmc.points import DEFAULT_DRAW, Funnel, Point, PointKind, points_dir, run_points
from pmc.tts import DEFAULT_TTS


@click.command("points")
@workdir_option
@click.option(
    "--draw",
    type=click.IntRange(min=1),
    default=DEFAULT_DRAW,
    show_default=True,
    help="Points drawn per kind (all of them when there are fewer).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the draw.")
@click.option(
    "--tts", default=DEFAULT_TTS, show_default=True, help="Voice for the spoken questions."
)
@click.option(
    "--judge",
    metavar="PROVIDER:MODEL",
    help="An LLM judge of the survivors (openai:gpt-4o, anthropic:...; key from OPENAI_API_KEY "
    "or ANTHROPIC_API_KEY). Without one the heuristic ranking stands.",
)
@click.option(
    "--require-review",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    metavar="N",
    help="Keep a pause or turn-end window only when at least N reviewers accepted it "
    "(`pmc review`). A window any reviewer rejected is left out whatever N is.",
)
def points_command(
    workdir: Path, draw: int, seed: int, tts: str, judge: str | None, require_review: int
) -> None:
    """Build the point set: filtered, ranked, capped and drawn boundaries, and recall questions.

    Reads WORKDIR/corpus and WORKDIR/labels (only conversations selected by `pmc select`, when
    it ran); writes WORKDIR/points/manifest.jsonl, funnel.json and audio/<point_id>/ (history of
    both speakers, the live stream, the human reply, the history as text). Every window the
    judge left, drawn or not, is listed in WORKDIR/points/windows.jsonl for `pmc review`.
    """
    with progress_bar("building points") as start:
        points, funnel = run_points(
            workdir,
            draw=draw,
            seed=seed,
            tts=tts,
            judge=create_client(judge) if judge else None,
            require_review=require_review,
            progress=start,
        )
    show_points(workdir, points, funnel)


def show_points(workdir: Path, points: list[Point], funnel: Funnel) -> None:
    """Review files that were skipped, the funnel, where the points are, and the next step."""
    for problem in funnel.review_problems:
        warn(f"{problem}; skipped")
    print_funnel(funnel)
    out.print(f"{len(points)} points in {points_dir(workdir)}", soft_wrap=True)
    next_step(
        command_line("pmc", "run", "--workdir", workdir, "--system", "endpointer-300"),
        command_line("pmc", "review", "--workdir", workdir),
        why="put a system at every point ('pmc systems list' names them all), or first "
        "listen to the windows and reject the bad ones",
    )


def print_funnel(funnel: Funnel) -> None:
    """The curation funnel as a table (the paper's Table 4)."""
    table = Table(
        title=f"Curation funnel over {funnel.conversations} conversations "
        f"(judge: {funnel.judge}; draw {funnel.draw}, seed {funnel.seed})",
        title_justify="left",
    )
    table.add_column("stage")
    for kind in PointKind:
        table.add_column(kind.value.replace("_", " "), justify="right")
    rows = (
        ("candidate boundaries in the labels", funnel.candidates),
        ("after label-only filters", funnel.label_filters),
        ("after audio filters", funnel.audio_filters),
        ("after the cap of 3 per kind per conversation", funnel.capped),
        ("after the judge", funnel.judged),
        ("rejected by a reviewer", funnel.rejected),
        (_reviewed_row(funnel.require_review), funnel.reviewed),
        (f"drawn (seed {funnel.seed})", funnel.drawn),
    )
    recall = (PointKind.CONVERSATION_RECALL, PointKind.FACT_RECALL)
    # Recall points are not boundaries: the first three stages do not apply to them.
    boundary_only = (funnel.candidates, funnel.label_filters, funnel.audio_filters, funnel.rejected)
    for name, counts in rows:
        cells = [
            "–"
            if kind in recall and any(counts is c for c in boundary_only)
            else str(counts[kind.value])
            for kind in PointKind
        ]
        table.add_row(name, *cells)
    out.print(table)


def _reviewed_row(required: int) -> str:
    if required == 0:
        return "after review (rejected windows left out)"
    return f"after review (accepted by at least {required})"
