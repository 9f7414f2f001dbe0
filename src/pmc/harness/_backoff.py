"""How long a rollout waits before trying again after a failure the server says is passing.

Exponential backoff with jitter, never shorter than the server's own ``retry_after_s``
(docs/architecture.md "Protocol"). The jitter is drawn from the rollout's seed, so the same
run waits the same times, and rollouts refused together do not all come back together.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

MAX_DOUBLINGS = 64
"""Past this the cap has long been reached; it keeps ``2 ** n`` a finite float."""


@dataclass(frozen=True)
class Backoff:
    """The backoff policy: ``base_s`` doubling per retry, capped, times a jitter in [0.5, 1].

    Attributes:
        base_s: The first retry's wait before jitter.
        cap_s: The longest wait before jitter (a server's retry-after may be longer).
    """

    base_s: float = 1.0
    cap_s: float = 30.0

    def wait_s(self, retry: int, seed: int, retry_after_s: float | None = None) -> float:
        """The wait before retry number ``retry`` (1 for the first) of the rollout ``seed``."""
        if retry < 1:
            raise ValueError(f"retries count from 1, not {retry}")
        exponential = min(self.cap_s, self.base_s * 2.0 ** min(retry - 1, MAX_DOUBLINGS))
        jitter = random.Random(seed + retry).uniform(0.5, 1.0)
        return max(retry_after_s or 0.0, exponential * jitter)
