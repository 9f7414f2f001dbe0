"""Every transport failure is retried the same way: after a backoff that holds no slot.

The backoff here ends by progress (once the other rollout has run), never by time: if the
waiting rollout held its slot, the other could not run and the test would fail at its guard.
"""

from __future__ import annotations

import asyncio

import pytest

from pmc.harness import Backoff, Observed
from pmc.harness._limit import AdaptiveLimit
from pmc.harness._retry import Attempts, RetryPolicy, with_retries
from pmc.harness._tally import SystemTally
from pmc.systems import RetryReason, TransportError

GUARD_S = 10.0
"""Only a broken slot rule reaches this: the test fails instead of hanging."""


def test_a_refused_connection_waits_without_holding_its_slot() -> None:
    limit, overall = AdaptiveLimit(1), asyncio.Semaphore(1)
    refused, other = Attempts(seed=1), Attempts(seed=2)
    ran: list[str] = []
    waits: list[float] = []
    other_ran = asyncio.Event()

    async def connect_refused_once() -> None:
        ran.append("refused" if not ran else "retry")
        refused.failure = None
        if len(ran) == 1:
            refused.failure = TransportError("connection refused (no retry reason)")
            refused.causes.append(str(refused.failure))

    async def connect_other() -> None:
        ran.append("other")
        assert limit.in_flight == 1  # the slot is the other's while the refused one waits
        other.failure = None
        other_ran.set()

    async def backoff_until_the_other_ran(wait_s: float) -> None:
        waits.append(wait_s)
        assert limit.in_flight == 0  # waiting holds no slot
        await other_ran.wait()

    async def both() -> tuple[TransportError | None, ...]:
        tally = SystemTally()
        policy = RetryPolicy(most=8, retries=2, backoff=Backoff())
        first = with_retries(
            connect_refused_once,
            refused,
            limit,
            overall,
            policy,
            tally,
            backoff_until_the_other_ran,
        )
        second = with_retries(connect_other, other, limit, overall, policy, tally)
        results = await asyncio.wait_for(asyncio.gather(first, second), GUARD_S)
        assert (tally.retried, tally.retry_reasons) == (0, {})  # not a passing failure
        return tuple(results)

    assert asyncio.run(both()) == (None, None)
    assert ran == ["refused", "other", "retry"]
    assert waits == [Backoff().wait_s(1, 1)]


@pytest.mark.parametrize(
    ("passing", "failed", "gives_up"),
    [(0, 2, False), (0, 3, True), (5, 2, False), (6, 2, True), (8, 0, True), (7, 0, False)],
)
def test_retries_bound_unmarked_failures_and_attempts_bound_all(
    passing: int, failed: int, gives_up: bool
) -> None:
    attempts = Attempts(seed=0, passing=passing, failed=failed)
    assert RetryPolicy(most=8, retries=2).gives_up(attempts) is gives_up


def test_a_passing_failure_is_counted_with_its_wait() -> None:
    tally = SystemTally(concurrency=4, lowest_concurrency=4)
    seen: list[Observed] = []
    tally.sink = seen.append
    tally.passing_failure(RetryReason.OVERLOADED.value, 1.5)
    tally.stepped_down(2)
    assert (tally.retried, tally.waited_s, tally.lowest_concurrency) == (1, 1.5, 2)
    assert [(o.retried, o.waited_s, o.lowest_concurrency) for o in seen] == [(1, 1.5, 4), (0, 0, 2)]
