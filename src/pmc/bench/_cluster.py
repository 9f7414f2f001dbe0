"""The cluster bench: the harness bench's rollouts spread over one or more Ray streaming processes.

Each streaming process is a Ray actor given one CPU, running :func:`~pmc.bench.run_level` in an
event loop of its own, as a ``pmc run --ray`` worker streams its rollouts. At each step of N
concurrent rollouts (in steps of 64), every process count streams N between its processes, one
count after the other, against a fresh fake in a child process; a count stops at the first step
it cannot hold within the bounds (docs/scaling.md "How many streams a core holds"). The fake
and the machine's own CPU use are measured over each level, so a reader can tell a harness that
fell behind from a machine that had no core left to give it.
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pmc import cluster
from pmc.bench._harness import SPEECH_S, HarnessBenchRow, LevelResult, run_level, summarise
from pmc.bench._usage import machine_ticks, process_cpu_s
from pmc.clock import responsive_interpreter
from pmc.testing.loopback import LATENCY_MS, LoopbackBehaviour, fake_system_child

PROCESSES = (1, 2)
"""Streaming processes compared side by side (the cluster issue: one and two, on 2 cores)."""
STEP = 64
"""Concurrency steps (the cluster issue; a worker streams up to 64 rollouts per core)."""
MAX_CONCURRENCY = 2048
"""Where the steps stop even when every count still holds."""
LATENESS_P99_BOUND_MS = 5.0
ERROR_P99_BOUND_MS = 10.0
"""The bounds a level must hold (the cluster issue): input lateness p99, and the harness's
latency error p99 (net of the fake's own lateness in sending, which the fake reports: on a
shared machine the fake is starved too, and that is the machine's part, not the harness's)."""


@dataclass(frozen=True)
class ClusterBenchRow:
    """One level: N rollouts over ``processes`` streaming processes.

    Attributes:
        processes: Streaming processes (Ray actors, one CPU each) the rollouts were split over.
        process_ids: Each process's id, in the order of its share.
        level: The harness bench's row for the level; its ``cpu_s`` and ``preemptions`` are
            summed over the processes, its ``wall_s`` is the longest process's.
        rollouts_per_s: Completed rollouts per second of the level's wall time.
        fake_cpu_s: CPU seconds the fake system's process used during the level.
        machine_busy: Share of the machine's cores busy during the level, every process
            counted (1.0: no core was ever idle); NaN where ``/proc/stat`` is not there.
        held: The level completed every rollout within both bounds.
    """

    processes: int
    process_ids: tuple[int, ...]
    level: HarnessBenchRow
    rollouts_per_s: float
    fake_cpu_s: float
    machine_busy: float
    held: bool

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (NaN as null)."""
        extra = {
            "rollouts_per_s": self.rollouts_per_s,
            "fake_cpu_s": self.fake_cpu_s,
            "machine_busy": self.machine_busy,
        }
        return {
            "processes": self.processes,
            "process_ids": list(self.process_ids),
            **self.level.to_dict(),
            **{k: None if math.isnan(v) else v for k, v in extra.items()},
            "held": self.held,
        }


def holds(row: HarnessBenchRow) -> bool:
    """Every rollout completed; input lateness and the harness's latency error within bounds."""
    return (
        row.failed == 0
        and row.rollouts == row.concurrency
        and row.lateness_p99_ms <= LATENESS_P99_BOUND_MS
        and row.harness_error_p99_ms <= ERROR_P99_BOUND_MS
    )


def largest_held(rows: Sequence[ClusterBenchRow], processes: int) -> int:
    """The largest N that ``processes`` held, every smaller step held too (0: none)."""
    best = 0
    for row in sorted(
        (r for r in rows if r.processes == processes), key=lambda r: r.level.concurrency
    ):
        if not row.held:
            break
        best = row.level.concurrency
    return best


class StreamingProcess:
    """One streaming process (a Ray actor): runs a level's share of rollouts in its own loop."""

    def level(
        self, concurrency: int, behaviour: LoopbackBehaviour, speech_s: float, seed: int, url: str
    ) -> tuple[int, LevelResult]:
        """``concurrency`` rollouts at once against the fake at ``url``; this process's id too.

        What earlier levels left is collected and frozen first, as for the harness bench: a
        full collection over it mid-level stalled every stream at once (by 35 ms at 128).
        """
        with responsive_interpreter():
            level = asyncio.run(run_level(concurrency, behaviour, speech_s, seed, url))
        return os.getpid(), level


def split(total: int, parts: int) -> list[int]:
    """``total`` rollouts over ``parts`` processes, as evenly as they go."""
    return [total // parts + (i < total % parts) for i in range(parts)]


def merge(concurrency: int, levels: Sequence[LevelResult]) -> LevelResult:
    """One level from each process's share: outcomes pooled, CPU summed, the longest wall."""
    return LevelResult(
        concurrency,
        [o for level in levels for o in level.outcomes],
        sum(level.failed for level in levels),
        max(level.wall_s for level in levels),
        sum(level.cpu_s for level in levels),
        sum(level.preemptions for level in levels),
    )


def bench_cluster(
    processes: Sequence[int] = PROCESSES,
    step: int = STEP,
    max_concurrency: int = MAX_CONCURRENCY,
    latency_ms: float = LATENCY_MS,
    speech_s: float = SPEECH_S,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> list[ClusterBenchRow]:
    """Step N up by ``step`` for every count in ``processes`` until none holds any more.

    Runs on a new local Ray cluster with a CPU per streaming process, or on the cluster this
    process is already connected to (the fake must be reachable on loopback, so every process
    must be on this machine). ``progress(n, p)`` is told each level as it starts.
    """
    ours = not cluster.ray_module().is_initialized()
    ray = cluster.connect(None, num_cpus=max(processes))
    actor = ray.remote(StreamingProcess).options(num_cpus=1)
    streamers = [actor.remote() for _ in range(max(processes))]
    try:
        behaviour = LoopbackBehaviour(latency_ms=latency_ms)
        rows: list[ClusterBenchRow] = []
        going = sorted(set(processes))
        n = step
        while going and n <= max_concurrency:
            for count in list(going):
                if progress is not None:
                    progress(n, count)
                row = _level(ray, streamers[:count], n, behaviour, speech_s, seed)
                rows.append(row)
                if not row.held:
                    going.remove(count)
            n += step
        return rows
    finally:
        for streamer in streamers:
            ray.kill(streamer)
        if ours:
            cluster.disconnect()


def _level(
    ray: Any,
    streamers: Sequence[Any],
    concurrency: int,
    behaviour: LoopbackBehaviour,
    speech_s: float,
    seed: int,
) -> ClusterBenchRow:
    """One level against a fresh fake, with the fake's and the machine's CPU use around it."""
    with fake_system_child(behaviour) as fake:
        fake_start = process_cpu_s(fake.pid)
        busy_start, total_start = machine_ticks()
        start = time.perf_counter()
        shares = split(concurrency, len(streamers))
        # Each process staggers its own origins; a seed of its own keeps them from coinciding.
        done = ray.get(
            [
                s.level.remote(k, behaviour, speech_s, seed + i, fake.url)
                for i, (s, k) in enumerate(zip(streamers, shares, strict=True))
            ]
        )
        wall_s = time.perf_counter() - start
        fake_cpu_s = process_cpu_s(fake.pid) - fake_start
        busy_end, total_end = machine_ticks()
    row = summarise(merge(concurrency, [level for _, level in done]), behaviour.latency_ms)
    total = total_end - total_start
    return ClusterBenchRow(
        processes=len(streamers),
        process_ids=tuple(pid for pid, _ in done),
        level=row,
        rollouts_per_s=round(row.rollouts / wall_s, 2),
        fake_cpu_s=round(fake_cpu_s, 2),
        machine_busy=round((busy_end - busy_start) / total, 3) if total else math.nan,
        held=holds(row),
    )
