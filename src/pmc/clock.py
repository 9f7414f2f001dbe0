"""Clocks: real monotonic time, or virtual time that runs as fast as it can.

Every instant the harness observes is an integer of nanoseconds on the clock's own timeline
(docs/architecture.md "Clocks": ``time.monotonic_ns`` for real runs). A virtual clock lets
in-process systems run faster than real time and still produce the same trace: time only moves when
every task is waiting for it. The clock sits below the stages because adapters stamp what they
receive with it and local systems wait on it.
"""

from __future__ import annotations

import asyncio
import gc
import heapq
import itertools
import sys
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from pmc.cpu import default_slices

NS_PER_S = 1_000_000_000
T = TypeVar("T")


class Clock(ABC):
    """Where the harness reads the time and waits for deadlines."""

    @abstractmethod
    def now_ns(self) -> int:
        """The current instant, in nanoseconds."""

    @abstractmethod
    async def sleep_until(self, deadline_ns: int) -> None:
        """Return at (not before) ``deadline_ns``; at once if it has passed."""

    @abstractmethod
    async def run_blocking(self, work: Callable[[], T]) -> T:
        """Run CPU-bound work (a local system's model) without stalling other rollouts.

        On a real clock it runs in a thread; on a virtual clock it runs inline, so that no time
        passes while it computes, as if computation were instantaneous.
        """


class RealClock(Clock):
    """``time.monotonic_ns``; every stream of an event loop waits on one shared timetable.

    One driver task per event loop sleeps until shortly before the earliest deadline, spins the
    last fraction of a millisecond (asyncio's timers fire up to a scheduler tick late) and
    releases every waiter that is due. N concurrent streams so cost one timer and one spin per
    deadline instant instead of N of each, which keeps the loop idle between frames.
    """

    SPIN_NS = 250_000
    """Spin this long before a deadline (`pmc bench harness`: 1 ms spins at 64 streams kept the
    loop busy all the time)."""

    def now_ns(self) -> int:
        """Monotonic nanoseconds."""
        return time.monotonic_ns()

    async def sleep_until(self, deadline_ns: int) -> None:
        """Wait for the deadline without blocking other tasks."""
        if deadline_ns <= time.monotonic_ns():
            await asyncio.sleep(0)
            return
        await _timetable(asyncio.get_running_loop()).wait(deadline_ns, self.SPIN_NS)

    async def run_blocking(self, work: Callable[[], T]) -> T:
        """Run ``work`` in a worker thread."""
        return await asyncio.to_thread(work)


class _Timetable:
    """The deadlines every real clock of one event loop waits for, and the task that keeps them."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self.order = itertools.count()
        self.driver: asyncio.Task[None] | None = None
        self.replan: asyncio.Future[None] | None = None
        self.spin_ns = 0

    async def wait(self, deadline_ns: int, spin_ns: int) -> None:
        future: asyncio.Future[None] = self.loop.create_future()
        heapq.heappush(self.waiters, (deadline_ns, next(self.order), future))
        self.spin_ns = max(self.spin_ns, spin_ns)
        if self.driver is None or self.driver.done():
            self.driver = self.loop.create_task(self._drive())
        elif self.waiters[0][2] is future and self.replan is not None and not self.replan.done():
            self.replan.set_result(None)  # an earlier deadline than the one being slept for
        await future

    async def _drive(self) -> None:
        while self.waiters:
            deadline = self.waiters[0][0]
            remaining = deadline - time.monotonic_ns()
            if remaining > self.spin_ns:
                self.replan = self.loop.create_future()
                timer = self.loop.call_later(
                    (remaining - self.spin_ns) / NS_PER_S, _settle_future, self.replan
                )
                await self.replan
                timer.cancel()
                continue
            while time.monotonic_ns() < deadline:  # noqa: ASYNC110 - a deliberate short spin
                await asyncio.sleep(0)
            now = time.monotonic_ns()
            while self.waiters and self.waiters[0][0] <= now:
                future = heapq.heappop(self.waiters)[2]
                if not future.done():
                    future.set_result(None)


def _settle_future(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


_TIMETABLES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Timetable] = (
    weakref.WeakKeyDictionary()
)


def _timetable(loop: asyncio.AbstractEventLoop) -> _Timetable:
    """The running loop's timetable."""
    table = _TIMETABLES.get(loop)
    if table is None:
        table = _TIMETABLES[loop] = _Timetable(loop)
    return table


class VirtualClock(Clock):
    """Discrete-event time: waiting tasks wake in deadline order, as soon as all are waiting.

    A task that is not waiting on this clock (ready to run) always runs before time moves, so
    the order of events is that of real time with infinitely fast computation. Only tasks that
    wait on this clock or on each other may share it: a task waiting on a socket or a thread
    would see time jump past it.
    """

    MAX_YIELDS = 1000
    """Event-loop turns given to ready tasks before time moves regardless (a guard against a
    task that never waits)."""

    def __init__(self, start_ns: int = 0) -> None:
        self._now = start_ns
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self._driver: asyncio.Task[None] | None = None

    def now_ns(self) -> int:
        """The virtual instant."""
        return self._now

    async def sleep_until(self, deadline_ns: int) -> None:
        """Wait until virtual time reaches ``deadline_ns``."""
        if deadline_ns <= self._now:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (deadline_ns, next(self._order), future))
        if self._driver is None or self._driver.done():
            self._driver = asyncio.get_running_loop().create_task(self._drive())
        await future

    async def run_blocking(self, work: Callable[[], T]) -> T:
        """Run ``work`` inline: no virtual time passes while it computes."""
        return work()

    async def _drive(self) -> None:
        loop = asyncio.get_running_loop()
        while self._waiters:
            await _settle(loop, self.MAX_YIELDS)
            deadline = self._waiters[0][0]
            self._now = max(self._now, deadline)
            while self._waiters and self._waiters[0][0] == deadline:
                future = heapq.heappop(self._waiters)[2]
                if not future.done():
                    future.set_result(None)


async def _settle(loop: asyncio.AbstractEventLoop, limit: int) -> None:
    """Yield until no other callback is ready to run (or ``limit`` turns have passed).

    CPython's event loop keeps its ready callbacks in ``_ready``; where that is missing, a fixed
    number of turns stands in for it.
    """
    ready = getattr(loop, "_ready", None)
    await asyncio.sleep(0)
    for _ in range(limit if ready is not None else 50):
        if ready is not None and not ready:
            return
        await asyncio.sleep(0)


SWITCH_INTERVAL_S = 0.001
"""While streaming, another thread may hold the interpreter for at most 1 ms (Python's default
is 5 ms, a quarter of a 20 ms frame), so CPU-bound work elsewhere in the process cannot make
frames late."""


@contextmanager
def responsive_interpreter() -> Iterator[None]:
    """Keep the interpreter responsive for the duration of a run.

    The thread switch interval is shortened, and every object alive at the start is frozen out
    of garbage collection: a full collection over them took 20-25 ms at 64 streams, which made
    1% of frames late (``pmc bench harness``). The streams run on the scheduler's default slice
    even in a process that asked for long ones (:func:`pmc.cpu.default_slices`), and so do the
    systems' processes started meanwhile.
    """
    previous = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    gc.collect()
    gc.freeze()
    try:
        with default_slices():
            yield
    finally:
        gc.unfreeze()
        sys.setswitchinterval(previous)


__all__ = [
    "NS_PER_S",
    "SWITCH_INTERVAL_S",
    "Clock",
    "RealClock",
    "VirtualClock",
    "responsive_interpreter",
]
