"""How a run is made, where its folders are, and which points and clock each system gets.

The settings of ``pmc run`` (``RunSettings``), the run id that makes rerunning a command resume
it, and each card's share of the points: the rollouts stage (``_stage``) reads them all.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pmc import io
from pmc.conditions import Condition
from pmc.errors import PmcError
from pmc.harness._backoff import Backoff
from pmc.harness._clock_kind import ClockKind
from pmc.harness._history import HistorySource
from pmc.harness._protocol import ProtocolParams
from pmc.harness._retry import RetryPolicy
from pmc.harness._run import RUNS_DIR, Run
from pmc.points import MANIFEST_FILE, Point, PointKind, points_dir
from pmc.systems import Family, SystemCard, adapter_factory


@dataclass(frozen=True)
class RunSettings:
    """How a run is made; what affects its results is recorded in ``run.json``.

    Attributes:
        run_id: The run's folder under ``runs/``.
        rollouts: Rollouts per point and system (rollout 0 is the scored one).
        seed: The run's seed; each rollout's seed derives from it and the rollout's identity.
        concurrency: Rollouts in flight at once, over all systems (each card also has its own
            limit).
        clock: Which clock to use.
        retries: Extra attempts for a rollout whose transport failed without the server saying
            the failure was passing (a refused connection), within this invocation.
        retry_attempts: Most attempts of a rollout whose transport failed, within this
            invocation (failures marked passing: rate limited, overloaded, going away).
        params: The protocol's numbers.
        backoff: The waits before every retry (no slot is held meanwhile).
        ray: Stream on Ray workers at this cluster address (``auto``: this machine's cluster,
            or a new local one) instead of in this process; None: here. Not recorded: where a
            rollout streams does not change what it records.
        workers: Ray workers (streaming processes) for cards that ask for no resources
            (None: one per CPU of the cluster).
        history: The history every system gets: the point's own, none, or another
            conversation's (the context ablation).
        conditions: What every system hears the person through (noise, babble, a phone
            line: docs/conditions.md), in the order given; none: the points as recorded.
    """

    run_id: str
    rollouts: int = 1
    seed: int = 0
    concurrency: int = 16
    clock: ClockKind = ClockKind.AUTO
    retries: int = 2
    retry_attempts: int = 8
    params: ProtocolParams = field(default_factory=ProtocolParams)
    backoff: Backoff = field(default_factory=Backoff)
    ray: str | None = None
    workers: int | None = None
    history: HistorySource = HistorySource.FULL
    conditions: tuple[Condition, ...] = ()

    @property
    def retry(self) -> RetryPolicy:
        """The retry policy these settings make."""
        return RetryPolicy(self.retry_attempts, self.retries, self.backoff)


def runs_dir(workdir: Path) -> Path:
    """Where runs live."""
    return workdir / RUNS_DIR


def default_run_id(
    workdir: Path,
    history: HistorySource = HistorySource.FULL,
    conditions: Sequence[Condition] = (),
) -> str:
    """A run id from the points it runs on, so that rerunning the same command resumes.

    An ablated run gets its own (``run-<digest>-history-none``), beside the run it pairs with,
    and so does a run under conditions (``run-<digest>-babble-10db-<digest of their settings>``).
    """
    manifest = points_dir(workdir) / MANIFEST_FILE
    if not manifest.exists():
        raise PmcError(f"{manifest}: no points here; run `pmc points` first")
    suffix = "" if history is HistorySource.FULL else f"-history-{history.value}"
    if conditions:
        settings = json.dumps([c.to_dict() for c in conditions], sort_keys=True).encode()
        names = "+".join(c.name for c in conditions)
        suffix += f"-{names}-{hashlib.sha256(settings).hexdigest()[:6]}"
    return f"run-{io.sha256_file(manifest)[:10]}{suffix}"


def rollout_dir(run_dir: Path, system: str, point_id: str, rollout: int) -> Path:
    """The folder of one rollout."""
    return Run(run_dir).rollout_dir(system, point_id, rollout)


def clock_for(card: SystemCard, kind: ClockKind) -> ClockKind:
    """The clock a card's rollouts use; only in-process systems can run on virtual time."""
    if kind is ClockKind.AUTO:
        return ClockKind.VIRTUAL if card.family is Family.LOCAL else ClockKind.REAL
    if kind is ClockKind.VIRTUAL and card.family is not Family.LOCAL:
        raise PmcError(f"system card {card.name}: a {card.family} system needs the real clock")
    return kind


def points_for(card: SystemCard, points: Sequence[Point]) -> list[Point]:
    """The points a card runs: all, or the kinds its ``params.point_kinds`` lists.

    Talk-over points go only to a system whose adapter hears while it speaks
    (``SystemAdapter.HEARS_WHILE_SPEAKING``): played to one that does not, the clip would
    measure the adapter, not the system.
    """
    wanted = kinds_of(card)
    if not adapter_factory(card).HEARS_WHILE_SPEAKING:
        wanted = {k for k in wanted if not k.talks_over}
    return [p for p in points if p.kind in wanted]


def kinds_of(card: SystemCard) -> set[PointKind]:
    """The kinds a card's ``params.point_kinds`` lists (all where it lists none)."""
    kinds = card.point_kinds
    try:
        return set(PointKind) if kinds is None else {PointKind(k) for k in kinds}
    except ValueError as exc:
        raise PmcError(f"system card {card.name}: params.point_kinds: {exc}") from None


def unheard_points(card: SystemCard, points: Sequence[Point]) -> int:
    """Talk-over points a card would run but for an adapter that does not hear while it speaks."""
    kinds = kinds_of(card)
    return len([p for p in points if p.kind in kinds]) - len(points_for(card, points))
