"""``pmc score``: the paper's metrics for every rollout of a run, from the rollouts' own files."""

from __future__ import annotations

import os
from pathlib import Path

import click
from rich.table import Table

from pmc.cli._ui import command_line, next_step, onset_option, out, progress_bar, ray_option
from pmc.gate import GateParams, OnsetRule
from pmc.harness import Run
from pmc.models import ALLOW_ENV
from pmc.report import first_look, load_run
from pmc.scoring import (
    DEFAULT_SCORING_ASR,
    ScoreSettings,
    ScoreTally,
    ScoringCluster,
    Transcription,
    make_judge,
    run_scoring,
)


@click.command("score")
@click.option(
    "--run",
    "run_dir",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    required=True,
    help="The run folder, WORKDIR/runs/RUN_ID.",
)
@click.option(
    "--asr",
    default=DEFAULT_SCORING_ASR,
    show_default=True,
    help="Transcriber: faster-whisper:base (bundled), faster-whisper:tiny.en (bundled, faster), "
    "faster-whisper:/path/to/model, or a hub name (needs the internet).",
)
@click.option(
    "--judge",
    metavar="PROVIDER:MODEL",
    help="An LLM judge of recall answers (openai:gpt-4o, anthropic:...; key from the "
    "provider's environment variable). The strict matcher always runs.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    help="Processes that transcribe [default: 2; with --ray, one per CPU of the cluster, or "
    "one per GPU with --gpus-per-worker].",
)
@onset_option(
    "Where speech begins: envelope (the first sample of the speech, inside the gate's "
    "first window or the one before) or window (the start of the first 20 ms window that "
    "passed the gate, as the paper did). Scores made with the other setting are made again."
)
@click.option(
    "--transcription",
    type=click.Choice([mode.value for mode in Transcription]),
    default=Transcription.GATED.value,
    show_default=True,
    help="What the recogniser hears: gated (each stretch of speech the gate found, with half a "
    "second each side, as a clip of its own) or track (the whole played track in one pass, as "
    "before; a short or repeated reply can lose its words). Scores made with the other setting "
    "are made again.",
)
@click.option("--system", "systems", multiple=True, help="Only this system (repeatable).")
@ray_option
@click.option(
    "--gpus-per-worker",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="With --ray: GPUs each worker takes; above 0 Whisper runs on CUDA (the recogniser's "
    "setting gains @cuda, so its scores are kept apart from CPU ones).",
)
@click.option(
    "--allow-changed-models",
    is_flag=True,
    help="Score with a bundled model file that is not the one pmc was tested with, recording "
    f"the difference in the scores' provenance (as {ALLOW_ENV}=1 does); by default such a "
    "file is refused.",
)
def score_command(
    run_dir: Path,
    asr: str,
    judge: str | None,
    workers: int | None,
    onset: OnsetRule,
    transcription: str,
    systems: tuple[str, ...],
    ray_address: str | None,
    gpus_per_worker: float,
    allow_changed_models: bool,
) -> None:
    """Score every rollout of a run: speech gate, words on the stream clock, every metric.

    Writes RUN/scores/SYSTEM/POINT/K.json as each rollout is scored (a rerun keeps scores made
    with the same settings) and RUN/scores/SYSTEM.jsonl. Rollouts without audio and failed
    rollouts are outcomes of their own, never zeros. With --ray the rollouts are scored on Ray
    workers, which get each rollout's files from this process; the scores are the same.
    """
    if gpus_per_worker and not ray_address:
        raise click.UsageError("--gpus-per-worker needs --ray")
    if allow_changed_models:
        os.environ[ALLOW_ENV] = "1"  # the scoring workers inherit it
    if gpus_per_worker and asr.startswith("faster-whisper") and "@" not in asr:
        asr = f"{asr}@cuda"
    settings = ScoreSettings(
        asr=asr,
        gate=GateParams(),
        judge=judge,
        onset=onset,
        transcription=Transcription(transcription),
    )
    hook = make_judge(judge, run_dir) if judge else None
    where = ScoringCluster(ray_address, gpus_per_worker) if ray_address else None
    with progress_bar("scoring rollouts") as start:
        tallies = run_scoring(
            run_dir, settings, workers, list(systems) or None, start, hook, cluster=where
        )
    show_scores(run_dir, tallies)


def show_scores(run_dir: Path, tallies: dict[str, ScoreTally]) -> None:
    """A first look at the scores, and the next step."""
    print_summary(run_dir, tallies)
    next_step(command_line("pmc", "report", "--run", run_dir), why="the tables, figures and pages")


def print_summary(run_dir: Path, tallies: dict[str, ScoreTally]) -> None:
    """A first look per system (rollout 0, by the report's main table; the report has it all)."""
    table = Table(title=f"Scores of {run_dir.name} (rollout 0)", title_justify="left")
    for name in ("system", "pause silent/takeover/after", "turn-end latency", "recall at 120 s"):
        table.add_column(name)
    table.add_column("no audio / heard, no words / failed", justify="right")
    for look in first_look(load_run(run_dir), list(tallies)):
        shares = "-"
        if look.pause is not None and look.pause[0].estimate is not None:
            shares = " / ".join(f"{v.estimate or 0.0:.2f}" for v in look.pause)
        latency = look.latency
        latency_text = "-"
        if latency is not None and latency.estimate is not None:
            latency_text = f"{latency.estimate:.2f} s (n={latency.n})"
        recall = look.recall
        recall_text = "-"
        if recall is not None and recall.estimate is not None:
            recall_text = f"{recall.estimate:.2f} (n={recall.n})"
        counts = f"{look.no_audio} / {look.untranscribed} / {look.failed}"
        table.add_row(look.system, shares, latency_text, recall_text, counts)
    out.print(table)
    out.print(f"scores in {Run(run_dir).scores_dir}", soft_wrap=True)
