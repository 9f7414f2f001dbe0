"""``pmc bench``: speed measurements, reported rather than asserted in tests."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.table import Table

from pmc import io
from pmc.bench import (
    CONCURRENCY,
    LABELS_TARGET_MS,
    SPEECH_S,
    HarnessBenchRow,
    bench_curve,
    bench_harness,
    bench_labels,
    bench_score,
    steadiness,
)
from pmc.cli._ui import err, out, systems_dir_option
from pmc.scoring import DEFAULT_SCORING_ASR
from pmc.testing.loopback import LATENCY_MS, SILENCE_MS


@click.group()
def bench() -> None:
    """Measure how fast parts of the pipeline run."""


@bench.command("labels")
@click.option("--minutes", type=float, default=12.0, show_default=True, help="Conversation length.")
@click.option("--repeat", type=int, default=20, show_default=True, help="Timed runs.")
def bench_labels_command(minutes: float, repeat: int) -> None:
    """Time the rule engine on a synthetic conversation (no gap-fill ASR), one process, one core."""
    found = bench_labels(minutes, repeat)
    out.print(
        f"rule engine on a {minutes:g}-minute conversation ({found.words} words, "
        f"{found.labels} labels): median {found.median_ms:.1f} ms, best {min(found.times_ms):.1f} "
        f"ms over {repeat} runs (target {LABELS_TARGET_MS:.0f} ms: "
        f"{'met' if found.met else 'missed'})",
        soft_wrap=True,
    )


HARNESS_TARGET = (64, 5.0, 10.0)
"""The Real-time harness issue's target: at 64 rollouts on 2 cores, input lateness p99 <= 5 ms
and latency measurement error p99 <= 10 ms."""


def _levels(ctx: click.Context, param: click.Parameter, value: str) -> list[int]:
    """``8,32,64`` as a list of positive integers."""
    try:
        levels = [int(part) for part in value.split(",") if part.strip()]
    except ValueError:
        raise click.BadParameter("a comma-separated list of integers, e.g. 8,32,64") from None
    if not levels or min(levels) <= 0:
        raise click.BadParameter("at least one level, each a positive integer")
    return levels


Command = TypeVar("Command", bound=Callable[..., Any])

LOOPBACK_OPTIONS = (
    click.option(
        "--latency-ms",
        type=click.FloatRange(min=SILENCE_MS),
        default=LATENCY_MS,
        show_default=True,
        help=f"The fake system's known response latency (at least its {SILENCE_MS:g} ms "
        "endpointing silence).",
    ),
    click.option(
        "--seconds",
        type=click.FloatRange(min=0.1),
        default=SPEECH_S,
        show_default=True,
        help="Speech-like input per rollout, before the silence it is answered in.",
    ),
    click.option("--seed", type=int, default=0, show_default=True, help="Input noise and stagger."),
    click.option(
        "--json",
        "json_path",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Also write the rows (and the settings) to this JSON file.",
    ),
)
"""The options of both loopback benches (``harness``, ``cluster``), defined once."""


def loopback_options(command: Command) -> Command:
    """Give a bench command :data:`LOOPBACK_OPTIONS`, in their order, after its own."""
    for option in reversed(LOOPBACK_OPTIONS):
        command = option(command)
    return command


@bench.command("harness")
@click.option(
    "--concurrency",
    default=",".join(map(str, CONCURRENCY)),
    show_default=True,
    callback=_levels,
    help="Rollouts at once, one level after the other (comma-separated).",
)
@click.option(
    "--same-loop",
    is_flag=True,
    help="Serve the fake system in the rollouts' own event loop, not in a child process.",
)
@loopback_options
def bench_harness_command(
    concurrency: list[int],
    latency_ms: float,
    seconds: float,
    seed: int,
    same_loop: bool,
    json_path: Path | None,
) -> None:
    """Stream N rollouts at once over loopback websockets to a fake with a known latency.

    Reports how late input frames left and how far the response latency measured on the played
    track is from the known one. The fake runs in a child process unless --same-loop. Progress
    lines go to standard error between levels only, so that no display thread runs while a
    level streams.
    """
    steady = steadiness()
    err.print(
        f"machine: {steady.slow_share:.1%} of 10 ms windows ran at under half speed "
        f"(slowest {steady.slowest:.0%})"
    )
    rows = []
    for i, n in enumerate(concurrency, 1):
        err.print(f"[{i}/{len(concurrency)}] {n} rollouts at once...")
        rows.extend(
            bench_harness(
                [n], latency_ms=latency_ms, speech_s=seconds, seed=seed, same_loop=same_loop
            )
        )
    out.print(_harness_table(rows, os.cpu_count() or 0))
    target = next((r for r in rows if r.concurrency == HARNESS_TARGET[0]), None)
    if target is not None:
        met = (
            target.failed == 0
            and target.lateness_p99_ms <= HARNESS_TARGET[1]
            and target.error_p99_ms <= HARNESS_TARGET[2]
        )
        out.print(
            f"target at N={HARNESS_TARGET[0]} (lateness p99 <= {HARNESS_TARGET[1]:g} ms, error "
            f"p99 <= {HARNESS_TARGET[2]:g} ms, on 2 cores): {'met' if met else 'missed'}",
            soft_wrap=True,
        )
    if json_path is not None:
        io.write_json(
            json_path,
            {
                "cores": os.cpu_count(),
                "latency_ms": latency_ms,
                "speech_s": seconds,
                "seed": seed,
                "same_loop": same_loop,
                "machine_steadiness": steady.to_dict(),
                "rows": [r.to_dict() for r in rows],
            },
        )
        err.print(f"wrote {json_path}")


def _harness_table(rows: list[HarnessBenchRow], cores: int) -> Table:
    """The rows as a table; times in milliseconds."""
    table = Table(title=f"harness bench, {cores} cores (ms)")
    for name in ("N", "done", "failed", "late", "lateness p50/p99/max"):
        table.add_column(name, justify="right")
    for name in ("|error| p50/p99/max", "mean error", "preempted", "wall s"):
        table.add_column(name, justify="right")
    for r in rows:
        table.add_row(
            *(str(x) for x in (r.concurrency, r.rollouts, r.failed, r.late_rollouts)),
            _triple(r.lateness_p50_ms, r.lateness_p99_ms, r.lateness_max_ms),
            _triple(r.error_p50_ms, r.error_p99_ms, r.error_max_ms),
            _ms(r.error_mean_ms),
            str(r.preemptions),
            f"{r.wall_s:.1f}",
        )
    return table


def _triple(p50: float, p99: float, worst: float) -> str:
    """Three percentiles as ``p50 / p99 / max``."""
    return " / ".join(_ms(x) for x in (p50, p99, worst))


def _ms(value: float) -> str:
    """Milliseconds with one decimal, or a dash where nothing was measured."""
    return "-" if math.isnan(value) else f"{value:.1f}"


SCORE_TARGET = 10.0
"""The Scoring issue's target: at least 10x real time on 2 cores with Whisper base int8."""


@bench.command("score")
@click.option("--asr", default=DEFAULT_SCORING_ASR, show_default=True, help="Transcriber.")
@click.option("--workers", type=click.IntRange(min=1), default=2, show_default=True)
@systems_dir_option
def bench_score_command(asr: str, workers: int, systems_dir: Path | None) -> None:
    """Score a small run of the reference systems and report seconds of audio per second.

    The run (always-speak, the person and the shuffled person on points spoken by the bundled
    voice) is made first and not timed; scoring it from nothing is.
    """
    err.print("making a run of the reference systems, then scoring it...")
    result = bench_score(asr, workers, systems_dir)
    out.print(
        f"{result.rollouts} rollouts, {result.played_s:.0f} s of played audio scored in "
        f"{result.wall_s:.1f} s with {asr} and {workers} worker(s): {result.speed:.1f}x real time "
        f"on {os.cpu_count()} cores (target {SCORE_TARGET:g}x: "
        f"{'met' if result.speed >= SCORE_TARGET else 'missed'})",
        soft_wrap=True,
    )


@bench.command("curve")
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    required=True,
    help="A working directory with points (e.g. demo-work after make demo).",
)
@click.option("--system", default="endpointer-300", show_default=True, help="The card swept.")
@systems_dir_option
@click.option(
    "--cards",
    "cards_run",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="How many of the settings to also run as cards, to time one.",
)
def bench_curve_command(
    workdir: Path, system: str, systems_dir: Path | None, cards_run: int
) -> None:
    """Time a 20-setting sweep by replay against running settings as cards (rollouts only)."""
    from pmc.cli._run import load_cards
    from pmc.curves import DEFAULT_SILENCE_MS

    (card,) = load_cards((system,), systems_dir)
    with out.status("sweeping, then running settings as cards"):
        found = bench_curve(workdir, card, DEFAULT_SILENCE_MS, cards_run)
    out.print(
        f"{found.settings} settings on {found.points} pause and turn-end points: sweep "
        f"{found.sweep_s:.1f} s; one setting as a card {found.per_card_s:.1f} s (mean of "
        f"{found.cards_run}: {', '.join(f'{s:.1f}' for s in found.card_s)}), so all "
        f"{found.settings} as cards about {found.per_card_s * found.settings:.0f} s; the sweep "
        f"takes {found.ratio:.3f} of that (target under {1 / 20:.3f})",
        soft_wrap=True,
    )
    out.print_json(data=found.to_dict())
