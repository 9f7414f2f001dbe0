"""``pmc calibrate-gate``: check the speech gate against windowed Whisper labels (Table 8)."""

from __future__ import annotations

import os
from pathlib import Path

import click
from rich import box
from rich.table import Table

from pmc.asr import DEFAULT_ASR
from pmc.calibration import (
    THREADS_PER_WORKER,
    Calibration,
    LabelSettings,
    SweepGrid,
    calibrate,
    find_tracks,
    label_tracks,
    write_calibration,
)
from pmc.cli._ui import command_line, err, next_step, onset_option, out, progress_bar
from pmc.errors import PmcError
from pmc.gate import OnsetRule

DEFAULT_WORKERS = max(1, (os.cpu_count() or 1) // THREADS_PER_WORKER)
"""One transcribing process per two cores (each decodes on two threads)."""


@click.command("calibrate-gate")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--system",
    "systems",
    multiple=True,
    metavar="NAME",
    help="Calibrate on this system's rollouts only; repeat it for several (default: all).",
)
@click.option(
    "--asr",
    default=DEFAULT_ASR,
    show_default=True,
    help="The labelling recogniser, faster-whisper:MODEL (MODEL: tiny.en, base, a model folder, "
    "or a hub name).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=DEFAULT_WORKERS,
    show_default=True,
    help="Transcribing processes, each loading the model once.",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    help="Use only the first N tracks (by system, point and rollout), for a quick look.",
)
@onset_option(
    "Where a gate onset is placed, as `pmc score --onset`: envelope (the first sample of "
    "the speech, as scores place it) or window (the 20 ms window grid, to compare with the "
    "paper's Table 8). gate.md says which."
)
def calibrate_gate_command(
    run_dir: Path,
    systems: tuple[str, ...],
    asr: str,
    workers: int,
    limit: int | None,
    onset: OnsetRule,
) -> None:
    """Sweep the speech gate's settings against Whisper labels of a run's played audio.

    Each played track is cut into 2 s windows at a 1 s hop, each peak-normalised and
    transcribed; an instant counts as speech only where every window covering it has a word
    that passed Whisper's checks. Every combination of open threshold, release ratio and minimum
    duration is then scored on onset error and missed utterances (paper appendix D, Table 8).
    Writes RUN_DIR/calibration/gate.json, gate.md and gate.csv; window decodes are cached in
    RUN_DIR/calibration/labels/, so a rerun only sweeps.
    """
    try:
        settings = LabelSettings(asr=asr)
        keys = find_tracks(run_dir, systems, limit)
        with progress_bar("transcribing windows") as start:
            labelled = label_tracks(run_dir, keys, settings, workers, start)
        err.print(f"tracks transcribed now {labelled.decoded}, from the cache {labelled.reused}")
        with progress_bar("sweeping the gate") as start:
            cal = calibrate(run_dir, labelled, settings, SweepGrid(), start, onset)
        paths = write_calibration(run_dir, cal)
    except PmcError as exc:  # one line, also when the command is used outside the pmc group
        raise click.ClickException(str(exc)) from None
    out.print(calibration_table(cal))
    out.print(f"calibration in {paths[0].parent} ({', '.join(p.name for p in paths)})")
    next_step(
        command_line("pmc", "report", "--run", run_dir),
        why="gate.md has every column (the row marked DESIGN is the gate every score uses); "
        "the run's report",
    )


def calibration_table(cal: Calibration) -> Table:
    """The sweep as a compact terminal table (gate.md has every column), the default gate bold."""
    table = Table(
        title=f"Gate calibration of {cal.run_id}: {cal.tracks} tracks, {cal.utterances} "
        "labelled utterances",
        title_justify="left",
        caption="missed: utterances no gate interval overlaps; false: gate intervals over "
        "labelled silence only; err: |gate onset - labelled onset| (ms), median and p90; "
        "bias: median signed error (ms), negative = gate early",
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for name in ("open", "release", "min ms", "missed", "false", "err", "p90 err", "bias", ""):
        table.add_column(name, justify="right", no_wrap=True)
    for r in cal.rows:
        table.add_row(
            f"{r.gate.open_rms:g}",
            f"{r.gate.release_ratio:g}",
            f"{r.gate.min_s * 1000:g}",
            f"{r.missed}/{r.utterances}",
            str(r.false_onsets),
            _ms(r.median_abs_onset_ms),
            _ms(r.p90_abs_onset_ms),
            _ms(r.median_onset_bias_ms),
            "DESIGN" if r.design else "",
            style="bold" if r.design else None,
        )
    return table


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"
