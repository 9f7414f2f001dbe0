"""Rollouts on Ray workers: one actor per CPU, each with its own streaming event loop.

Each worker runs :func:`~pmc.harness._rollout.run_here`, the code the local runner runs, and
hands the finished rollout back; the driver keeps the limits, the retries and the writing, so a
run folder is the same as a local run's and no shared filesystem is needed (docs/scaling.md).
A worker that dies (its process, or its node) fails its rollouts as passing transport errors
(``worker_lost``): they start afresh on another worker, and a new worker takes its place.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pmc.clock import responsive_interpreter
from pmc.errors import PmcError
from pmc.harness._clock_kind import ClockKind
from pmc.harness._protocol import ProtocolParams
from pmc.harness._rollout import RolloutJob, RolloutResult, run_here
from pmc.harness._warm import warm_up
from pmc.systems import RetryReason, SystemCard, TransportError, adapter_factory

STREAMS_PER_WORKER = 64
"""Real-time rollouts one worker's event loop may stream at once (``pmc bench harness`` keeps
64 streams on time on one core)."""
RESOURCES_PARAM = "ray_resources"
"""A card's ``params.ray_resources``: Ray resources each of its workers needs (a custom
resource naming the nodes its server is reachable from, a GPU...)."""


@dataclass(frozen=True)
class Failed:
    """A rollout's transport failure, as a worker hands it back (exceptions do not travel well)."""

    cause: str
    retry: RetryReason | None
    retry_after_s: float | None

    def error(self) -> TransportError:
        return TransportError(self.cause, retry=self.retry, retry_after_s=self.retry_after_s)


class RolloutWorker:
    """One streaming process on the cluster (a Ray actor; :class:`RayRollouts` starts them).

    ``modules`` are imported first: those that register the cards' adapters (a plug-in's own
    module registers its adapter on import, and a worker is a fresh process).
    """

    def __init__(self, cards: Sequence[SystemCard], modules: Sequence[str]) -> None:
        for module in modules:
            importlib.import_module(module)
        warm_up(cards)
        self._interpreter = contextlib.ExitStack()
        self._interpreter.enter_context(responsive_interpreter())  # for the process's life
        self._virtual: asyncio.Lock | None = None

    async def run(
        self, job: RolloutJob, kind: ClockKind, params: ProtocolParams
    ) -> RolloutResult | Failed:
        """One attempt of ``job``; virtual-clock rollouts one at a time (they are computation)."""
        if kind is not ClockKind.VIRTUAL:
            return await self._attempt(job, kind, params)
        if self._virtual is None:
            self._virtual = asyncio.Lock()
        async with self._virtual:
            return await self._attempt(job, kind, params)

    async def _attempt(
        self, job: RolloutJob, kind: ClockKind, params: ProtocolParams
    ) -> RolloutResult | Failed:
        try:
            return await run_here(job, kind, params)
        except TransportError as exc:
            return Failed(str(exc), exc.retry, exc.retry_after_s)

    def ready(self) -> bool:
        """True once the worker has loaded its cards' models."""
        return True


def resources_of(card: SystemCard) -> dict[str, float]:
    """The Ray resources each worker for ``card`` needs, from its card."""
    wanted = card.ray_resources
    if not all(v >= 0 for v in wanted.values()):
        raise PmcError(
            f"system card {card.name}: params.{RESOURCES_PARAM} must be a table of "
            f"resource names to non-negative numbers, not {wanted!r}"
        )
    return {k: float(v) for k, v in sorted(wanted.items())}


_Key = tuple[tuple[str, float], ...]


class _Worker:
    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.in_flight = 0


class RayRollouts:
    """The driver's side: a pool of workers per set of resources, and sending rollouts to them.

    ``workers`` is the number of workers of the pool for cards that ask for no resources
    (default: one per CPU of the cluster); a pool for cards that do ask has as many workers as
    the largest concurrency among its cards, up to that number.
    """

    def __init__(self, ray: Any, cards: Sequence[SystemCard], workers: int) -> None:
        self._ray = ray
        self._remote = ray.remote(RolloutWorker)
        self._lost_errors = (
            ray.exceptions.RayActorError,
            ray.exceptions.ActorUnavailableError,
            ray.exceptions.ObjectLostError,
            ray.exceptions.WorkerCrashedError,
            ray.exceptions.NodeDiedError,
        )
        self.workers = workers
        self._cards: dict[_Key, list[SystemCard]] = {}
        for card in cards:
            self._cards.setdefault(tuple(resources_of(card).items()), []).append(card)
        self._pools: dict[_Key, list[_Worker]] = {}
        for key, group in self._cards.items():
            size = workers if not key else min(workers, max(c.concurrency for c in group))
            self._pools[key] = [self._spawn(key) for _ in range(size)]
        # Every worker has loaded its models before the first stream starts.
        ray.get([w.handle.ready.remote() for pool in self._pools.values() for w in pool])

    def _spawn(self, key: _Key) -> _Worker:
        options: dict[str, Any] = {
            "num_cpus": 1,
            "max_concurrency": STREAMS_PER_WORKER,
            "max_restarts": 0,  # a lost worker is replaced by the driver, its work retried
        }
        if key:
            # Placed by its resources alone: asking a CPU too would leave it unplaced for good
            # where the default pool already holds every CPU of the only nodes that have them.
            options["resources"] = dict(key)
            options["num_cpus"] = 0
        cards = self._cards[key]
        modules = sorted({adapter_factory(card).__module__ for card in cards})
        return _Worker(self._remote.options(**options).remote(cards, modules))

    async def run(self, job: RolloutJob, kind: ClockKind, params: ProtocolParams) -> RolloutResult:
        """One attempt of ``job`` on the least busy worker of its pool.

        Raises:
            TransportError: The system's transport failed, or the worker was lost.
        """
        key = tuple(resources_of(job.card).items())
        pool = self._pools[key]
        worker = min(pool, key=lambda w: w.in_flight)
        worker.in_flight += 1
        try:
            outcome = await worker.handle.run.remote(job, kind, params)
        except self._lost_errors as exc:
            self._replace(key, worker)
            raise TransportError(
                f"Ray worker lost ({type(exc).__name__})", retry=RetryReason.WORKER_LOST
            ) from None
        finally:
            worker.in_flight -= 1
        if isinstance(outcome, Failed):
            raise outcome.error()
        result: RolloutResult = outcome
        return result

    def _replace(self, key: _Key, worker: _Worker) -> None:
        pool = self._pools[key]
        if worker in pool:
            pool.remove(worker)
            with contextlib.suppress(Exception):
                self._ray.kill(worker.handle)
            pool.append(self._spawn(key))

    def close(self) -> None:
        """Stop every worker."""
        for pool in self._pools.values():
            for worker in pool:
                with contextlib.suppress(Exception):
                    self._ray.kill(worker.handle)
        self._pools.clear()
