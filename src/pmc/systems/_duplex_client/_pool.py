"""Cards that name a pool of duplex servers instead of one: ``endpoint = "pool://NAME/PATH"``.

``pmc serve-duplex --ray --replicas N --pool NAME`` serves a model as N replicas on a Ray
cluster, one session each, and keeps their endpoints in a registry
(:class:`pmc.duplex_server.PoolRegistry`). A session of such a card takes a free replica from the
registry before it opens its websocket, connects to the replica's address with the card's path
and query, and gives the replica back when it closes, failed or not (docs/scaling.md). The
process joins the Ray cluster it runs on (:func:`pmc.cluster.connect`, ``auto``); a Ray worker
of ``pmc run --ray`` already has.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pmc import cluster
from pmc.duplex_server import POOL_NAMESPACE, pool_actor_name
from pmc.errors import PmcError
from pmc.systems._adapter import TransportError
from pmc.systems._card import SystemCard

SCHEME = "pool"

_registries: dict[str, Any] = {}
"""Registry actor handles by pool name: looked up once per process, not per session."""


def pool_of(card: SystemCard) -> str | None:
    """The pool a card's endpoint names (None: an ordinary endpoint)."""
    if not card.endpoint:
        return None
    parts = urlsplit(card.endpoint)
    if parts.scheme != SCHEME:
        return None
    if not parts.netloc:
        raise PmcError(
            f"system card {card.name}: {card.endpoint!r} names no pool (pool://NAME/PATH)"
        )
    return parts.netloc


def registry(pool: str) -> Any:
    """The registry actor of ``pool`` on the Ray cluster this process is part of.

    Raises:
        PmcError: Ray is missing, or the cluster has no such pool.
    """
    if not cluster.ray_module().is_initialized():
        _registries.clear()  # handles of a cluster this process has left
    ray = cluster.connect(cluster.AUTO)
    handle = _registries.get(pool)
    if handle is None:
        try:
            handle = ray.get_actor(pool_actor_name(pool), namespace=POOL_NAMESPACE)
        except ValueError:
            raise PmcError(
                f"no duplex pool {pool!r} on the Ray cluster; serve one with "
                f"`pmc serve-duplex --ray --pool {pool} --replicas N ...`"
            ) from None
        _registries[pool] = handle
    return handle


@dataclass(frozen=True)
class Lease:
    """One session's replica.

    Attributes:
        pool: The pool's name.
        replica: The replica's endpoint, ``ws://HOST:PORT``.
        url: The card's endpoint on that replica (its path and query kept).
        ticket: What the replica was acquired under.
    """

    pool: str
    replica: str
    url: str
    ticket: str


async def take(card: SystemCard, pool: str, fail: Callable[[str], TransportError]) -> Lease:
    """A free replica of ``pool`` for one session of ``card``; waits while all are busy.

    Raises:
        TransportError: From ``fail``: the pool is not there, or its registry stopped.
    """
    try:
        handle = registry(pool)
    except PmcError as exc:
        raise fail(str(exc)) from None
    ray = cluster.ray_module()
    ticket = uuid.uuid4().hex
    try:
        replica: str = await handle.acquire.remote(ticket)
    except asyncio.CancelledError:
        handle.withdraw.remote(ticket)  # a replica granted meanwhile goes back to the pool
        raise
    except ray.exceptions.RayError as exc:
        _registries.pop(pool, None)  # a pool served again has a new registry
        raise fail(f"duplex pool {pool!r} stopped ({type(exc).__name__})") from None
    assert card.endpoint is not None  # pool_of(card) found a pool in it
    on = urlsplit(replica)
    url = urlunsplit(urlsplit(card.endpoint)._replace(scheme=on.scheme, netloc=on.netloc))
    return Lease(pool, replica, url, ticket)


async def give_back(lease: Lease, failed: bool) -> None:
    """End ``lease``'s session at the registry (``failed``: its transport failed)."""
    handle = _registries.get(lease.pool)
    if handle is None:
        return  # the registry went away: its pool is gone, and so is the lease
    with contextlib.suppress(cluster.ray_module().exceptions.RayError):
        await handle.release.remote(lease.replica, failed, lease.ticket)
