"""The rollouts stage: every selected system at every point, K times, resumable.

``runs/<run_id>/run.json`` holds the cards, adapter versions, seed and protocol; each rollout
lives in ``rollouts/<system>/<point_id>/<k>/``. A rollout is done when its ``trace.json``
exists (written last, atomically), so rerunning the same command keeps finished rollouts,
retries failed ones and never duplicates one. Within an invocation, a failed rollout is retried
after a backoff that holds no slot, and a server's refusal steps the card's concurrency down;
what the servers did is logged as it happens (docs/architecture.md "Protocol").
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Callable, Iterator, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from pmc import __version__, cluster, io
from pmc.clock import responsive_interpreter
from pmc.errors import PmcError
from pmc.harness._clock_kind import ClockKind
from pmc.harness._conditions import refuse_conflicts, with_conditions
from pmc.harness._history import with_history
from pmc.harness._inputs import clip_for, live_for, preload_for, reference_for, rollout_seed
from pmc.harness._limit import AdaptiveLimit
from pmc.harness._observations import ObservationLog, fold_observations
from pmc.harness._protocol import ProtocolParams
from pmc.harness._ray import RayRollouts
from pmc.harness._retry import Attempts, with_retries
from pmc.harness._rollout import RolloutJob, RolloutResult, run_here
from pmc.harness._run import (
    ERROR_FILE,
    TRACE_FILE,
    Run,
    RunRecord,
    SystemEntry,
    read_run_record,
    write_run_record,
)
from pmc.harness._settings import (
    RunSettings,
    clock_for,
    points_for,
    runs_dir,
    unheard_points,
)
from pmc.harness._tally import SystemTally
from pmc.harness._trace import write_rollout
from pmc.harness._warm import warm_up
from pmc.points import MANIFEST_FILE, Point, points_dir, read_points
from pmc.progress import Advance, Start
from pmc.systems import SystemCard, TransportError, adapter_factory


def _run_record(workdir: Path, cards: Sequence[SystemCard], settings: RunSettings) -> RunRecord:
    return RunRecord(
        run_id=settings.run_id,
        pmc_version=__version__,
        points_manifest_sha256=io.sha256_file(points_dir(workdir) / MANIFEST_FILE),
        seed=settings.seed,
        rollouts=settings.rollouts,
        protocol=settings.params,
        history=settings.history,
        conditions=settings.conditions,
        systems={
            card.name: SystemEntry(
                card, adapter_factory(card).VERSION, clock_for(card, settings.clock)
            )
            for card in cards
        },
    )


def _joined_record(path: Path, new: RunRecord) -> RunRecord:
    """The run's record with this invocation's systems; refused where they disagree."""
    return read_run_record(path).joined(new, path) if path.exists() else new


def remove_partial_files(run_dir: Path) -> int:
    """Delete temporary files a killed run left behind (rollouts, ``run.json``); how many."""
    return Run(run_dir).remove_temporaries()


@dataclass(frozen=True)
class _Task:
    card: SystemCard
    point: Point
    rollout: int
    folder: Path


def run_rollouts(
    workdir: Path,
    cards: Sequence[SystemCard],
    settings: RunSettings,
    start: Start | None = None,
) -> dict[str, SystemTally]:
    """Run every card at every point ``settings.rollouts`` times; resume what a run began.

    Args:
        workdir: The working directory (points come from its ``points/``).
        cards: The systems.
        settings: How to run.
        start: Progress hook: ``start(total)`` returns the function called per rollout.
    """
    if not cards:
        raise PmcError("no system given; name at least one card with --system")
    names = [c.name for c in cards]
    if len(set(names)) != len(names):
        raise PmcError(f"a system is named twice: {', '.join(names)}")
    refuse_conflicts(settings.conditions)
    points = read_points(workdir)
    run_dir = runs_dir(workdir) / settings.run_id
    run = Run(run_dir)
    record = _joined_record(run.record_path, _run_record(workdir, cards, settings))
    write_run_record(run.record_path, record)
    remove_partial_files(run_dir)
    fold_observations(run)  # what a killed invocation observed
    with ObservationLog(run.observation_log) as log:
        tallies = _run_tasks(workdir, run, cards, points, settings, log, start)
    fold_observations(run)
    return tallies


def _run_tasks(
    workdir: Path,
    run: Run,
    cards: Sequence[SystemCard],
    points: Sequence[Point],
    settings: RunSettings,
    log: ObservationLog,
    start: Start | None,
) -> dict[str, SystemTally]:
    """Every rollout not yet done, each observation logged as it happens; the tallies."""
    tallies = {
        c.name: SystemTally(
            concurrency=c.concurrency,
            lowest_concurrency=c.concurrency,
            unheard=unheard_points(c, points),
            sink=functools.partial(log.write, c.name),
        )
        for c in cards
    }
    tasks = [
        _Task(card, point, k, run.rollout_dir(card.name, point.point_id, k))
        for card in cards
        for point in points_for(card, points)
        for k in range(settings.rollouts)
    ]
    advance = start(len(tasks)) if start else (lambda: None)
    todo = []
    for task in tasks:
        if (task.folder / TRACE_FILE).exists():
            tallies[task.card.name].kept += 1
            advance()
        else:
            todo.append(task)
    virtual = [t for t in todo if clock_for(t.card, settings.clock) is ClockKind.VIRTUAL]
    real = [t for t in todo if t not in virtual]
    pdir = points_dir(workdir)
    with _runner(settings, [t.card for t in todo]) as (runner, streams):
        # Virtual-clock rollouts are pure computation: one per streaming process at a time,
        # before the real-time ones so they never compete with a live stream for the interpreter.
        asyncio.run(_run_all(virtual, streams, points, pdir, settings, tallies, advance, runner))
        asyncio.run(
            _run_all(real, settings.concurrency, points, pdir, settings, tallies, advance, runner)
        )
    return tallies


Runner = Callable[[RolloutJob, ClockKind, ProtocolParams], Awaitable[RolloutResult]]
"""Runs one attempt of a rollout somewhere, and hands it back (or raises TransportError)."""


@contextlib.contextmanager
def _runner(settings: RunSettings, cards: Sequence[SystemCard]) -> Iterator[tuple[Runner, int]]:
    """Where rollouts stream, and how many streaming processes there are: here (one), or Ray."""
    unique = list({c.name: c for c in cards}.values())
    if settings.ray is None or not unique:
        if unique:
            warm_up(unique)
        with responsive_interpreter():
            yield run_here, 1
        return
    ray = cluster.connect(settings.ray)
    workers = settings.workers or cluster.cluster_cpus()
    pool = RayRollouts(ray, unique, workers)
    try:
        yield pool.run, workers
    finally:
        pool.close()


@dataclass(frozen=True)
class _Context:
    """What every rollout of one event loop shares."""

    points: Sequence[Point]
    pdir: Path
    settings: RunSettings
    tallies: dict[str, SystemTally]
    disk: Executor
    runner: Runner


async def _run_all(
    tasks: Sequence[_Task],
    concurrency: int,
    points: Sequence[Point],
    pdir: Path,
    settings: RunSettings,
    tallies: dict[str, SystemTally],
    advance: Advance,
    runner: Runner,
) -> None:
    overall = asyncio.Semaphore(concurrency)
    per_card = {t.card.name: AdaptiveLimit(t.card.concurrency) for t in tasks}
    # A rollout takes its card's slot before an overall one: one waiting for its card holds
    # no overall slot, so other cards' rollouts fill the overall limit.
    # Reading inputs and writing rollouts happen in one worker thread, one at a time: the
    # streaming loop keeps a core to itself on a two-core machine.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="pmc-disk") as disk:
        context = _Context(points, pdir, settings, tallies, disk, runner)

        async def one(task: _Task) -> None:
            seed = rollout_seed(settings.seed, task.card.name, task.point.point_id, task.rollout)
            attempts = Attempts(seed)
            failure = await with_retries(
                lambda: _run_task(task, attempts, context),
                attempts,
                per_card[task.card.name],
                overall,
                settings.retry,
                tallies[task.card.name],
            )
            if failure is not None:
                await _give_up(task, attempts, context)
            advance()

        await asyncio.gather(*(one(t) for t in tasks))


async def _give_up(task: _Task, attempts: Attempts, context: _Context) -> None:
    """Count a rollout that failed, and leave an ``error.json`` saying why."""
    tally = context.tallies[task.card.name]
    tally.failed += 1
    cause = attempts.causes[-1]
    tally.causes[cause] = tally.causes.get(cause, 0) + 1
    error = {"point_id": task.point.point_id, "system": task.card.name, "attempts": attempts.causes}
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(context.disk, io.write_json, task.folder / ERROR_FILE, error)


async def _run_task(task: _Task, attempts: Attempts, context: _Context) -> None:
    """One attempt of a rollout while it holds its slots: its files, or ``attempts.failure``."""
    loop = asyncio.get_running_loop()
    card, settings = task.card, context.settings
    if attempts.job is None:
        attempts.job = await loop.run_in_executor(context.disk, _load, task, attempts.seed, context)
    kind = clock_for(card, settings.clock)
    try:
        result = await context.runner(attempts.job, kind, settings.params)
    except TransportError as exc:
        attempts.causes.append(f"transport: {exc}")
        attempts.failure = exc
        return
    trace, played, raw = result.trace, result.played, result.raw
    await loop.run_in_executor(
        context.disk, write_rollout, task.folder, trace, played, raw, result.heard
    )
    with contextlib.suppress(FileNotFoundError):
        (task.folder / ERROR_FILE).unlink()
    tally = context.tallies[card.name]
    tally.done += 1
    tally.late += int(trace.audit.late)
    tally.count_unknown(trace.outputs)
    attempts.failure = None


def _load(task: _Task, seed: int, context: _Context) -> RolloutJob:
    """A rollout's inputs, from the points' files."""
    card, point, pdir = task.card, task.point, context.pdir
    adapter = adapter_factory(card)
    reference = None
    if adapter.TAKES_REFERENCE:
        reference = reference_for(card, point, context.points, pdir)
    job = RolloutJob(
        point,
        card,
        task.rollout,
        seed,
        live_for(pdir, point),
        with_history(
            preload_for(pdir, point, seed, adapter.ENDPOINTS_TALK_OVER, card.endpoints_everywhere),
            context.settings.history,
            point,
            context.points,
            pdir,
            context.settings.seed,
        ),
        reference,
        clip_for(pdir, point),
    )
    # Every rollout stops by the cap after its boundary, which is never past the live stream's end.
    tail_s = context.settings.params.cap_s + 1.0
    return with_conditions(job, context.settings.conditions, context.points, pdir, tail_s)
