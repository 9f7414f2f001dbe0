"""What a run did per system: its outcomes, and what it observed of the server on the way.

The observations (passing failures, backoff, a stepped-down concurrency, messages pmc does
not know) go into ``run.json`` under ``observed``, summed over the invocations of a run, and
only when there was something to observe: a clean run's ``run.json`` has no such key. Each is
handed to the tally's ``sink`` as it happens (the run's observation log, ``_observations``), so
a killed invocation keeps them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pmc.harness._trace import OutputRecord
from pmc.systems import unknown_names

OBSERVED = "observed"
"""The key of ``run.json`` that holds the observations by system."""


def _add(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    both = dict(a)
    for name, n in b.items():
        both[name] = both.get(name, 0) + n
    return dict(sorted(both.items()))


@dataclass(frozen=True)
class Observed:
    """What one system's server did besides answering, over one run (``run.json``).

    Attributes:
        retried: Attempts made again after a failure the server said was passing.
        retry_reasons: Those failures by ``RetryReason`` value (retried or given up).
        waited_s: Backoff waited before the retries, over all rollouts.
        lowest_concurrency: The lowest the card's concurrency limit stepped down to.
        unknown: Messages of finished rollouts pmc does not know (``event x``, ``field y``).
    """

    retried: int
    retry_reasons: dict[str, int]
    waited_s: float
    lowest_concurrency: int
    unknown: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "retried": self.retried,
            "retry_reasons": dict(sorted(self.retry_reasons.items())),
            "waited_s": round(self.waited_s, 3),
            "lowest_concurrency": self.lowest_concurrency,
            "unknown": dict(sorted(self.unknown.items())),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Observed:
        """Inverse of :meth:`to_dict`."""
        return cls(
            int(data["retried"]),
            {str(k): int(v) for k, v in data["retry_reasons"].items()},
            float(data["waited_s"]),
            int(data["lowest_concurrency"]),
            {str(k): int(v) for k, v in data["unknown"].items()},
        )

    def plus(self, other: Observed) -> Observed:
        """Both invocations' observations: counts and waits summed, the lowest limit kept."""
        return Observed(
            self.retried + other.retried,
            _add(self.retry_reasons, other.retry_reasons),
            self.waited_s + other.waited_s,
            min(self.lowest_concurrency, other.lowest_concurrency),
            _add(self.unknown, other.unknown),
        )


@dataclass
class SystemTally:
    """Per-system counts of this invocation."""

    done: int = 0
    kept: int = 0
    failed: int = 0
    late: int = 0
    """Rollouts whose input ran late past the bound (kept, and marked in their trace)."""
    causes: dict[str, int] = field(default_factory=dict)
    concurrency: int = 1
    """The card's own concurrency limit."""
    lowest_concurrency: int = 1
    """The lowest the card's limit stepped down to after refusals (its own if it never did)."""
    retried: int = 0
    """Attempts made again after a failure the server said was passing."""
    retry_reasons: dict[str, int] = field(default_factory=dict)
    """Failures the server said were passing, by ``RetryReason`` value (retried or not)."""
    waited_s: float = 0.0
    """Backoff waited before those retries, over all rollouts."""
    unknown: dict[str, int] = field(default_factory=dict)
    """Messages of the finished rollouts that pmc does not know (``event x``, ``field y``)."""
    unheard: int = 0
    """Talk-over points the card was not put at: its adapter does not hear while it speaks."""

    sink: Callable[[Observed], None] | None = field(default=None, repr=False, compare=False)
    """Where each observation goes as it happens, as an :class:`Observed` of it alone."""

    def passing_failure(self, reason: str, wait_s: float | None) -> None:
        """A failure the server said was passing; ``wait_s``: retried after that backoff."""
        self.retry_reasons[reason] = self.retry_reasons.get(reason, 0) + 1
        if wait_s is not None:
            self.retried += 1
            self.waited_s += wait_s
        retried = 0 if wait_s is None else 1
        self._emit(retried=retried, retry_reasons={reason: 1}, waited_s=wait_s or 0.0)

    def stepped_down(self, limit: int) -> None:
        """The card's concurrency limit stepped down to ``limit``."""
        self.lowest_concurrency = min(self.lowest_concurrency, limit)
        self._emit(lowest_concurrency=limit)

    def count_unknown(self, outputs: Iterable[OutputRecord]) -> None:
        """Count what a finished rollout's trace kept as unknown."""
        seen: dict[str, int] = {}
        for output in outputs:
            for name in unknown_names(output.detail):
                seen[name] = seen.get(name, 0) + 1
        if seen:
            self.unknown = _add(self.unknown, seen)
            self._emit(unknown=seen)

    def _emit(
        self,
        retried: int = 0,
        retry_reasons: Mapping[str, int] | None = None,
        waited_s: float = 0.0,
        lowest_concurrency: int | None = None,
        unknown: Mapping[str, int] | None = None,
    ) -> None:
        """Hand one observation to the sink; the limit is the card's own unless it stepped."""
        if self.sink is None:
            return
        lowest = self.concurrency if lowest_concurrency is None else lowest_concurrency
        reasons, names = dict(retry_reasons or {}), dict(unknown or {})
        self.sink(Observed(retried, reasons, waited_s, lowest, names))

    def observed(self) -> Observed | None:
        """This invocation's observations; None if there were none."""
        stepped_down = self.lowest_concurrency < self.concurrency
        if not (
            self.retried or self.retry_reasons or self.waited_s or stepped_down or self.unknown
        ):
            return None
        return Observed(
            self.retried,
            dict(self.retry_reasons),
            self.waited_s,
            self.lowest_concurrency,
            dict(self.unknown),
        )
