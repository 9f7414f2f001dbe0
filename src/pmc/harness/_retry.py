"""A rollout's attempts while its transport fails: one policy for every failure retried.

Each attempt holds the card's slot and an overall one; the backoff between attempts holds
neither, so other rollouts use them meanwhile (docs/architecture.md "Protocol"). Which failures
are retried: one the server marks passing (rate limited, overloaded, going away, a lost worker),
up to ``retry_attempts`` attempts; any other (a refused connection, a close with an error) up to
``retries`` extra attempts, within those. A rate-limited or overloaded failure steps the card's
limit down. Every retry starts the rollout afresh.
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
"""One attempt of a rollout; it always sets ``Attempts.failure``."""

Sleep = Callable[[float], Awaitable[None]]
"""How a backoff is waited out (``asyncio.sleep``; a test may end it by progress instead)."""


@dataclass(frozen=True)
class RetryPolicy:
    """How often a rollout is tried again within an invocation, and how long it waits first.

    Attributes:
        most: Most attempts in all (``--retry-attempts``).
        retries: Most extra attempts after failures the server did not mark passing
            (``--retries``): a refused connection may be a server that is not there.
        backoff: The wait before each retry, holding no slot.
    """

    most: int = 8
    retries: int = 2
    backoff: Backoff = field(default_factory=Backoff)

    def gives_up(self, attempts: Attempts) -> bool:
        """Whether the rollout's failures so far end its attempts."""
        return attempts.passing + attempts.failed >= self.most or attempts.failed > self.retries


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


async def with_retries(
    attempt: Attempt,
    attempts: Attempts,
    limit: AdaptiveLimit,
    overall: asyncio.Semaphore,
    policy: RetryPolicy,
    tally: SystemTally,
    sleep: Sleep = asyncio.sleep,
) -> TransportError | None:
    """Attempt under the slots until done (None), or the failure the rollout is given up on."""
    while True:
        epoch = await limit.acquire()
        try:
            async with overall:
                await attempt()
            failure = attempts.failure
            if failure is None:
                limit.aimd.succeeded()
            elif failure.retry in STEP_DOWN and limit.aimd.refused(epoch):
                tally.stepped_down(limit.aimd.limit)
        finally:
            limit.release()
        if failure is None:
            return None
        if failure.retry is None:
            attempts.failed += 1
        else:
            attempts.passing += 1
        if policy.gives_up(attempts):
            if failure.retry is not None:
                tally.passing_failure(failure.retry.value, None)
            return failure
        retry = attempts.passing + attempts.failed
        wait = policy.backoff.wait_s(retry, attempts.seed, failure.retry_after_s)
        if failure.retry is not None:
            tally.passing_failure(failure.retry.value, wait)
        await sleep(wait)
