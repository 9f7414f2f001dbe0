"""A rollout's attempts while its server says its failures are passing.

Each attempt holds the card's slot and an overall one; the backoff between attempts holds
neither, so other rollouts use them meanwhile. A rate-limited or overloaded failure steps the
card's limit down (docs/architecture.md "Protocol"). Every retry starts the rollout afresh.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from pmc.harness._backoff import Backoff
from pmc.harness._limit import AdaptiveLimit
from pmc.harness._rollout import RolloutJob
from pmc.harness._tally import SystemTally
from pmc.systems import RetryReason, TransportError

STEP_DOWN = frozenset({RetryReason.RATE_LIMITED, RetryReason.OVERLOADED})
"""Passing failures that halve the card's concurrency limit."""

Attempt = Callable[[], Awaitable[None]]
"""One attempt (or a few, for failures not marked passing); it always sets ``Attempts.failure``."""


@dataclass
class Attempts:
    """One rollout's attempts so far in this invocation."""

    seed: int
    job: RolloutJob | None = None
    """Its inputs, read at the first attempt and kept for the others."""
    causes: list[str] = field(default_factory=list)
    failed: int = 0
    """Failures not marked passing."""
    passing: int = 0
    """Failures marked passing."""
    failure: TransportError | None = None
    """How the last attempt failed (None: it wrote the rollout)."""


async def retry_passing(
    attempt: Attempt,
    attempts: Attempts,
    limit: AdaptiveLimit,
    overall: asyncio.Semaphore,
    most: int,
    backoff: Backoff,
    tally: SystemTally,
) -> TransportError | None:
    """Attempt under the slots until done (None), or the failure the rollout is given up on.

    A failure marked passing is retried after ``backoff``, up to ``most`` attempts so ended;
    any other is handed back (``attempt`` retries those itself).
    """
    while True:
        epoch = await limit.acquire()
        try:
            async with overall:
                await attempt()
            failure = attempts.failure
            if failure is None:
                limit.aimd.succeeded()
            elif failure.retry in STEP_DOWN:
                limit.aimd.refused(epoch)
        finally:
            limit.release()
        if failure is None or failure.retry is None:
            return failure
        reason = failure.retry.value
        tally.retry_reasons[reason] = tally.retry_reasons.get(reason, 0) + 1
        attempts.passing += 1
        if attempts.passing >= most:
            return failure
        wait = backoff.wait_s(attempts.passing, attempts.seed, failure.retry_after_s)
        tally.retried += 1
        tally.waited_s += wait
        await asyncio.sleep(wait)
