"""The timing audit stored in every rollout's trace: was the input on time?"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from pmc.harness._streamer import FrameTiming

LATE_BOUND_MS = 20.0
"""A rollout whose input ran later than this is marked (Real-time harness issue)."""


@dataclass(frozen=True)
class TimingAudit:
    """Input lateness percentiles and output backlog of one rollout, in milliseconds."""

    frames: int
    lateness_p50_ms: float
    lateness_p99_ms: float
    lateness_max_ms: float
    output_backlog_max_ms: float
    """The longest any output chunk waited between its arrival and its playback."""
    late: bool
    """Input ran later than the bound at least once: the rollout is marked, not kept clean."""
    bound_ms: float
    request_late_max_ms: float = 0.0
    """The latest any message the adapter scheduled itself went out (``pmc.systems.LATE_MS``)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TimingAudit:
        """Inverse of :meth:`to_dict`."""
        return cls(**data)


def audit(
    timings: Sequence[FrameTiming],
    backlog_ms: float = 0.0,
    bound_ms: float = LATE_BOUND_MS,
    requests_late_ms: Sequence[float] = (),
) -> TimingAudit:
    """Summarise how late each input frame, and each scheduled request, left, against the bound."""
    late_ms = np.array([t.lateness_ns for t in timings], dtype=np.float64) / 1e6
    if late_ms.size == 0:
        late_ms = np.zeros(1)
    worst = float(late_ms.max())
    request_worst = max(requests_late_ms, default=0.0)
    return TimingAudit(
        frames=len(timings),
        lateness_p50_ms=round(float(np.percentile(late_ms, 50)), 3),
        lateness_p99_ms=round(float(np.percentile(late_ms, 99)), 3),
        lateness_max_ms=round(worst, 3),
        output_backlog_max_ms=round(backlog_ms, 3),
        late=max(worst, request_worst) > bound_ms,
        bound_ms=bound_ms,
        request_late_max_ms=round(request_worst, 3),
    )
