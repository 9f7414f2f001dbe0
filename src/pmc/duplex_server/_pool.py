"""The registry of a pool of duplex servers on Ray: which replicas are up, and which are busy.

``pmc serve-duplex --ray --replicas N`` runs one server per replica and keeps this registry as a
detached named Ray actor (:func:`pool_actor_name`, namespace :data:`POOL_NAMESPACE`); a card
whose endpoint is ``pool://NAME/PATH`` acquires a replica for each session and releases it at
the end (docs/scaling.md). Each replica has one model instance, so it serves one session at a
time: :meth:`PoolRegistry.acquire` waits, first come first served, while every replica is busy.

Plain Python and asyncio: no Ray import (the actor is made with ``ray.remote(PoolRegistry)``),
no PyTorch, so clients and the supervisor load it without the server's environment.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from dataclasses import dataclass, field

POOL_NAMESPACE = "pmc"
"""The Ray namespace of every pool's registry, so any driver on the cluster finds it by name."""
DEFAULT_POOL = "duplex"


def pool_actor_name(pool: str) -> str:
    """The registry actor's name for the pool called ``pool``."""
    return f"duplex-pool:{pool}"


@dataclass(frozen=True)
class Replica:
    """One running server of a pool.

    Attributes:
        endpoint: Where clients reach it, ``ws://<node ip>:<port>`` (no path).
        node: The Ray node's IP address.
        pid: The server process's id on that node.
        log: The server's log file on that node.
    """

    endpoint: str
    node: str
    pid: int
    log: str


@dataclass(frozen=True)
class PoolState:
    """A snapshot of the registry.

    Attributes:
        replicas: The live replicas, in the order they joined.
        busy: Endpoints of the replicas serving a session now.
        suspect: Endpoints held out after a failed session, until the supervisor checks them.
        gone: Endpoints that left the pool (their replica was replaced or stopped).
        sessions: Sessions handed out per endpoint, over the pool's life.
        failed: Sessions released as failed per endpoint, over the pool's life.
        waiting: Sessions waiting for a free replica now.
    """

    replicas: tuple[Replica, ...]
    busy: tuple[str, ...]
    suspect: tuple[str, ...]
    gone: tuple[str, ...]
    sessions: dict[str, int]
    failed: dict[str, int]
    waiting: int


@dataclass
class _Waiter:
    ticket: str
    granted: asyncio.Future[str] = field(default_factory=asyncio.Future)


class PoolRegistry:
    """The live endpoints of one pool and who holds them (a Ray actor; one event loop).

    A session is acquired under a ``ticket`` (any string unique to it) so that a client whose
    wait was cut short can :meth:`withdraw` it: a replica granted to it meanwhile comes back.
    A session released as failed puts its replica in ``suspect`` until the supervisor has
    checked it (:meth:`next_suspect`, then :meth:`restore` or :meth:`remove`): a replica whose
    server died is not handed to the next session before the supervisor has noticed.

    Every method is a coroutine, so that on Ray each runs on the actor's event loop, where the
    waiting sessions' futures live.
    """

    def __init__(self) -> None:
        self._replicas: dict[str, Replica] = {}
        self._free: deque[str] = deque()  # longest idle first, so the load is spread evenly
        self._holders: dict[str, str] = {}  # busy endpoint -> ticket
        self._suspect: set[str] = set()
        self._to_check: asyncio.Queue[str] = asyncio.Queue()
        self._gone: list[str] = []
        self._waiters: deque[_Waiter] = deque()
        self._sessions: dict[str, int] = {}
        self._failed: dict[str, int] = {}

    # -- the supervisor's side ---------------------------------------------------------------

    async def add(self, replica: Replica) -> None:
        """A new replica, free at once."""
        self._replicas[replica.endpoint] = replica
        self._free.append(replica.endpoint)
        self._hand_out()

    async def remove(self, endpoint: str) -> None:
        """A replica leaves the pool (its session, if any, has failed or will)."""
        self._remove(endpoint)

    def _remove(self, endpoint: str) -> None:
        if self._replicas.pop(endpoint, None) is None:
            return
        with contextlib.suppress(ValueError):
            self._free.remove(endpoint)
        self._holders.pop(endpoint, None)
        self._suspect.discard(endpoint)
        self._gone.append(endpoint)

    async def reset(self) -> None:
        """Forget every replica (a new supervisor takes over a pool whose servers are gone)."""
        for endpoint in list(self._replicas):
            self._remove(endpoint)

    async def next_suspect(self) -> str:
        """The next endpoint released as failed that is still in the pool (waits for one)."""
        while True:
            endpoint = await self._to_check.get()
            if endpoint in self._suspect:
                return endpoint

    async def restore(self, endpoint: str) -> None:
        """A suspect replica checked and found healthy: free again."""
        if endpoint in self._suspect:
            self._suspect.discard(endpoint)
            self._free.append(endpoint)
            self._hand_out()

    # -- the clients' side -------------------------------------------------------------------

    async def acquire(self, ticket: str = "") -> str:
        """A free replica's endpoint, now or once one is free; it is the caller's until released."""
        waiter = _Waiter(ticket)
        self._waiters.append(waiter)
        self._hand_out()
        try:
            return await waiter.granted
        except asyncio.CancelledError:
            self._drop(waiter)
            raise

    async def release(self, endpoint: str, failed: bool = False, ticket: str | None = None) -> None:
        """The session on ``endpoint`` ended; ``failed``: its transport failed.

        With ``ticket``, only the session acquired under it is released: a new replica may
        come up on a port a replaced one had, and a late release must not free its session.
        """
        self._release(endpoint, failed, ticket)

    def _release(self, endpoint: str, failed: bool = False, ticket: str | None = None) -> None:
        if failed:
            self._failed[endpoint] = self._failed.get(endpoint, 0) + 1
        holder = self._holders.get(endpoint)
        if holder is None or (ticket is not None and holder != ticket):
            return  # it left the pool meanwhile, or was withdrawn
        del self._holders[endpoint]
        if failed:
            self._suspect.add(endpoint)
            self._to_check.put_nowait(endpoint)
            return
        self._free.append(endpoint)
        self._hand_out()

    async def withdraw(self, ticket: str) -> None:
        """The client under ``ticket`` stopped waiting: drop its wait, or free what it got."""
        for waiter in list(self._waiters):
            if waiter.ticket == ticket:
                self._drop(waiter)
        for endpoint, holder in list(self._holders.items()):
            if holder == ticket:
                self._release(endpoint, ticket=ticket)

    async def state(self) -> PoolState:
        """What the pool looks like now."""
        return PoolState(
            replicas=tuple(self._replicas.values()),
            busy=tuple(sorted(self._holders)),
            suspect=tuple(sorted(self._suspect)),
            gone=tuple(self._gone),
            sessions=dict(sorted(self._sessions.items())),
            failed=dict(sorted(self._failed.items())),
            waiting=len(self._waiters),
        )

    # -- inside ------------------------------------------------------------------------------

    def _drop(self, waiter: _Waiter) -> None:
        with contextlib.suppress(ValueError):
            self._waiters.remove(waiter)
        if waiter.granted.done() and not waiter.granted.cancelled():
            self._release(waiter.granted.result())  # granted as it gave up: hand it on
        waiter.granted.cancel()

    def _hand_out(self) -> None:
        """Give free replicas to the longest waiting sessions."""
        while self._free and self._waiters:
            waiter = self._waiters.popleft()
            if waiter.granted.done():
                continue
            endpoint = self._free.popleft()
            self._holders[endpoint] = waiter.ticket
            self._sessions[endpoint] = self._sessions.get(endpoint, 0) + 1
            waiter.granted.set_result(endpoint)
