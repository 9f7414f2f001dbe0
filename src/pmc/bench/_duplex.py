"""The duplex bench (``pmc bench duplex``): the server's step, and the harness's lateness.

The server's 80 ms step idle and under load, and the harness's input lateness while it drives
the server. The tiny random-weight models (:mod:`pmc.testing.duplex_server`) on the CPU: one
instance's steps timed alone (no network), then the server (``pmc serve-duplex``) driven by
SESSIONS rollouts at once through the moshi-preloaded adapter, with the preload's prefill time.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pmc.harness import RolloutResult
from pmc.systems import Family, SystemCard
from pmc.testing.duplex_server import (
    SERVER_ENV,
    build_tiny_models,
    drive_rollouts,
    duplex_python,
    duplex_server,
    model_args,
)

STATS_TIMEOUT_S = 10.0
"""The server answers ``/api/stats`` from memory at once; this only guards against a hang."""


@dataclass(frozen=True)
class DuplexBench:
    """One bench result.

    Attributes:
        idle_step_ms: Each timed step of one instance alone, sorted.
        instances: The loaded server's ``/api/stats`` rows, one per instance (``steps``,
            ``mean_ms``, ``p50_ms``, ``p95_ms``, ``max_ms``).
        rollouts: Each driven rollout, with its trace (input lateness, the prefill's time).
    """

    idle_step_ms: list[float]
    instances: list[dict[str, Any]]
    rollouts: list[RolloutResult]


def bench_duplex(sessions: int, live_s: float, history_s: float, steps: int) -> DuplexBench:
    """Time ``steps`` idle steps, then run ``sessions`` rollouts at once against the server."""
    with tempfile.TemporaryDirectory(prefix="pmc-bench-duplex-") as tmp:
        models = build_tiny_models(Path(tmp) / "models")
        args = [str(duplex_python()), "-m", "pmc.duplex_server", "step-times", "--device", "cpu"]
        done = subprocess.run(
            [*args, *model_args(models, stock=False), "--steps", str(steps)],
            check=True,
            capture_output=True,
            text=True,
            env=os.environ | SERVER_ENV,
        )
        idle = sorted(json.loads(done.stdout.splitlines()[-1])["step_ms"])
        with duplex_server(models, Path(tmp) / "server.log", instances=sessions) as served:
            card = SystemCard(
                "bench-duplex",
                "moshi-preloaded",
                Family.DUPLEX,
                endpoint=f"{served.base}/api/duplex",
                frame_ms=80,
                concurrency=sessions,
                params={"identity_prompt": True},
            )
            results = asyncio.run(drive_rollouts(card, sessions, live_s, history_s))
            stats_url = served.base.replace("ws://", "http://") + "/api/stats"
            with urllib.request.urlopen(stats_url, timeout=STATS_TIMEOUT_S) as response:
                loaded = json.loads(response.read())["instances"]
    return DuplexBench(idle, loaded, list(results))
