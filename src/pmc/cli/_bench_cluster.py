"""``pmc bench cluster``: how many real-time streams one and two Ray streaming processes hold."""

from __future__ import annotations

import math
import os
from pathlib import Path

import click
from rich.table import Table

from pmc import io
from pmc.bench import (
    ERROR_P99_BOUND_MS,
    LATENESS_P99_BOUND_MS,
    MAX_CONCURRENCY,
    PROCESSES,
    STEP,
    ClusterBenchRow,
    bench_cluster,
    largest_held,
    steadiness,
)
from pmc.cli._bench import _levels, _triple, loopback_options
from pmc.cli._ui import err, out


@click.command("cluster")
@click.option(
    "--processes",
    default=",".join(map(str, PROCESSES)),
    show_default=True,
    callback=_levels,
    help="Streaming processes to compare (comma-separated); a local Ray cluster gets a CPU "
    "for each of the most.",
)
@click.option(
    "--step", type=click.IntRange(min=1), default=STEP, show_default=True, help="Step of N."
)
@click.option(
    "--max",
    "max_concurrency",
    type=click.IntRange(min=1),
    default=MAX_CONCURRENCY,
    show_default=True,
    help="Stop stepping here even if every count still holds.",
)
@loopback_options
def bench_cluster_command(
    processes: list[int],
    step: int,
    max_concurrency: int,
    latency_ms: float,
    seconds: float,
    seed: int,
    json_path: Path | None,
) -> None:
    """Stream N rollouts at once, split over Ray streaming processes, to the loopback fake.

    N grows by --step; each count of processes streams every N, side by side, until it first
    fails the bounds (input lateness p99 <= 5 ms, the harness's latency error p99 <= 10 ms net
    of the fake's own reported lateness, every rollout complete). Reports the largest N each
    count held, and at every step the lateness, the latency error, rollouts per second, the
    fake's own CPU time and how busy the machine was.
    Needs the ray extra: pip install 'pmc[ray]'.
    """
    processes = sorted(set(processes))
    steady = steadiness()
    err.print(
        f"machine: {steady.slow_share:.1%} of 10 ms windows ran at under half speed "
        f"(slowest {steady.slowest:.0%})"
    )

    def progress(n: int, count: int) -> None:
        err.print(f"N={n}: {count} streaming process{'es' if count > 1 else ''}...")

    rows = bench_cluster(
        processes, step, max_concurrency, latency_ms, seconds, seed, progress=progress
    )
    cores = os.cpu_count() or 0
    out.print(_table(rows, cores))
    for count in processes:
        out.print(
            f"{count} streaming process{'es' if count > 1 else ''}: held up to N = "
            f"{largest_held(rows, count)} (lateness p99 <= {LATENESS_P99_BOUND_MS:g} ms, "
            f"harness error p99 <= {ERROR_P99_BOUND_MS:g} ms)",
            soft_wrap=True,
        )
    if json_path is not None:
        io.write_json(
            json_path,
            {
                "cores": cores,
                "latency_ms": latency_ms,
                "speech_s": seconds,
                "seed": seed,
                "step": step,
                "machine_steadiness": steady.to_dict(),
                "largest_held": {str(c): largest_held(rows, c) for c in processes},
                "rows": [r.to_dict() for r in rows],
            },
        )
        err.print(f"wrote {json_path}")


def _table(rows: list[ClusterBenchRow], cores: int) -> Table:
    """The rows as a table; times in milliseconds."""
    table = Table(title=f"cluster bench, {cores} cores (ms; error p99: measured / harness's own)")
    for name in ("N", "procs", "done", "failed", "lateness p50/p99/max", "error p99"):
        table.add_column(name, justify="right")
    for name in ("fake late max", "rollouts/s", "cpu s streams/fake", "machine busy", "held"):
        table.add_column(name, justify="right")
    for r in rows:
        level = r.level
        table.add_row(
            *(str(x) for x in (level.concurrency, r.processes, level.rollouts, level.failed)),
            _triple(level.lateness_p50_ms, level.lateness_p99_ms, level.lateness_max_ms),
            f"{level.error_p99_ms:.1f} / {level.harness_error_p99_ms:.1f}",
            f"{level.reply_late_max_ms:.1f}",
            f"{r.rollouts_per_s:.1f}",
            f"{level.cpu_s:.1f} / {r.fake_cpu_s:.1f}",
            "-" if math.isnan(r.machine_busy) else f"{r.machine_busy:.0%}",
            "yes" if r.held else "no",
        )
    return table
