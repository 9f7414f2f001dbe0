"""How steadily this machine gives the process its processor (reported beside the harness bench)."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Steadiness:
    """How steadily this machine gives the process its processor, measured before the bench.

    A virtual machine whose host takes its cores away in bursts makes frames late whatever the
    harness does; the bench reports this beside its figures so a reader can tell the two apart.
    """

    windows: int
    slow_share: float
    """Share of 10 ms windows in which a busy loop ran at under half its median speed."""
    slowest: float
    """The slowest window's speed, as a fraction of the median."""

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return asdict(self)


def steadiness(seconds: float = 2.0, window_s: float = 0.01) -> Steadiness:
    """Run a busy loop in 10 ms windows and compare their speeds."""
    counts = []
    for _ in range(round(seconds / window_s)):
        start, n = time.perf_counter(), 0
        while time.perf_counter() - start < window_s:
            n += 1
        counts.append(n)
    speed = np.array(counts, dtype=np.float64) / float(np.median(counts))
    return Steadiness(
        len(counts), round(float((speed < 0.5).mean()), 4), round(float(speed.min()), 3)
    )
