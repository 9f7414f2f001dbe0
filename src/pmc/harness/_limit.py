"""A card's concurrency limit that steps down when its server refuses sessions (AIMD).

Additive increase, multiplicative decrease: a rate-limited or overloaded failure halves the
limit, each finished rollout earns it back a little, up to the card's own ``concurrency``
(docs/architecture.md "Protocol"). The policy (:class:`Aimd`) counts events only, never time,
so it behaves the same on any machine; :class:`AdaptiveLimit` admits rollouts by it.
"""

from __future__ import annotations

import asyncio
from collections import deque


class Aimd:
    """The limit itself: halved by refusals (once per window), grown by 1 per ``limit`` successes.

    A window is an epoch: every admission is tagged with the current one, and a refusal steps
    the limit down only if its rollout was admitted in the current epoch, which it then ends.
    Rollouts admitted before the last step down were admitted under the old limit, so a burst of
    refusals of sessions opened together counts once.
    """

    def __init__(self, ceiling: int) -> None:
        if ceiling < 1:
            raise ValueError(f"a concurrency limit is at least 1, not {ceiling}")
        self.ceiling = ceiling
        self.limit = ceiling
        self.lowest = ceiling
        """The lowest the limit has been."""
        self.epoch = 0
        self._credit = 0

    def succeeded(self) -> None:
        """A rollout finished: after ``limit`` of them the limit grows by one, up to the ceiling."""
        if self.limit >= self.ceiling:
            return
        self._credit += 1
        if self._credit >= self.limit:
            self.limit += 1
            self._credit = 0

    def refused(self, epoch: int) -> bool:
        """A rollout admitted in ``epoch`` was refused: halve the limit if it is this window's."""
        if epoch != self.epoch:
            return False
        self.limit = max(1, self.limit // 2)
        self.lowest = min(self.lowest, self.limit)
        self._credit = 0
        self.epoch += 1
        return True


class AdaptiveLimit:
    """Admits rollouts of one card while fewer than the :class:`Aimd` limit are in flight."""

    def __init__(self, ceiling: int) -> None:
        self.aimd = Aimd(ceiling)
        self.in_flight = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> int:
        """Wait for a slot (first come, first served); the epoch the rollout was admitted in."""
        while self._waiters or self.in_flight >= self.aimd.limit:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._wake()  # the slot it was woken for goes to the next one
                raise
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
            if self.in_flight < self.aimd.limit:
                break
        self.in_flight += 1
        self._wake()
        return self.aimd.epoch

    def release(self) -> None:
        """Give a slot back (report the outcome to :attr:`aimd` first)."""
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        free = self.aimd.limit - self.in_flight
        for waiter in list(self._waiters)[: max(0, free)]:
            if not waiter.done():
                waiter.set_result(None)
