"""The scoring stage: every rollout of a run scored in worker processes, resumably, idempotently.

Each rollout's score is written to ``scores/<system>/<point_id>/<k>.json`` as soon as it is
made, so a killed run loses nothing; a score made with the same settings is kept, one made with
other settings is made again. ``scores/<system>.jsonl`` then holds every score of a system in a
fixed order. Scoring the same rollouts twice writes identical files.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pmc import cluster, io
from pmc.asr import models_of
from pmc.errors import PmcError
from pmc.harness import Run
from pmc.models import FileRecord, Model, verify
from pmc.points import Point, read_points
from pmc.progress import Start
from pmc.provenance import Provenance
from pmc.scoring._pool import close_scoring_pool, scoring_pool
from pmc.scoring._ray import RayScoring
from pmc.scoring._types import Score, ScoreSettings, ScoreStatus
from pmc.scoring._worker import score_in_worker

PROVENANCE_SUFFIX = ".provenance.json"
"""``scores/<system>.provenance.json``: what produced the system's scores (pmc.provenance)."""


@dataclass
class ScoreTally:
    """Per-system counts of one scoring pass."""

    scored: int = 0
    kept: int = 0
    no_audio: int = 0
    transport_errors: int = 0
    statuses: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class _Task:
    system: str
    point: Point
    rollout: int
    folder: Path
    out: Path


def _tasks(run: Run, systems: list[str] | None) -> Iterator[_Task]:
    names = sorted(run.record.systems)
    if systems:
        unknown = sorted(set(systems) - set(names))
        if unknown:
            raise PmcError(f"{run.record_path}: no system {', '.join(unknown)} in this run")
        names = [n for n in names if n in systems]
    points = {p.point_id: p for p in read_points(run.workdir)}
    for entry in run.rollouts(names):
        point = points.get(entry.point_id)
        if point is None:
            raise PmcError(f"{entry.folder.parent}: no such point in the run's points manifest")
        out = run.scores_dir / entry.system / entry.point_id / f"{entry.rollout}.json"
        yield _Task(entry.system, point, entry.rollout, entry.folder, out)


def _kept(task: _Task, digest: str) -> Score | None:
    """A score already made with these settings, if any."""
    if not task.out.exists():
        return None
    score = Score.from_dict(io.read_json(task.out))
    return score if score.settings.digest() == digest else None


@dataclass(frozen=True)
class ScoringCluster:
    """Where to score on Ray: the cluster's address and the GPUs each worker takes.

    ``auto``: the cluster this machine belongs to, or a new local one; 0 GPUs: CPUs only.
    """

    address: str = "auto"
    gpus_per_worker: float = 0.0


def run_scoring(
    run_dir: Path,
    settings: ScoreSettings,
    workers: int | None = 2,
    systems: list[str] | None = None,
    start: Start | None = None,
    judge: Callable[[Score], Score] | None = None,
    cluster: ScoringCluster | None = None,
) -> dict[str, ScoreTally]:
    """Score every rollout of the run in ``run_dir``; keep what is already scored alike.

    Args:
        run_dir: ``WORKDIR/runs/<run_id>``.
        settings: Recogniser, gate and judge.
        workers: Processes that transcribe (None: 2, or with ``cluster`` one per CPU of the
            cluster, one per GPU when its workers take GPUs); local ones are kept for the next
            pass with the same recogniser and number (:func:`close_scoring_pool` ends them).
        systems: Only these systems (all by default).
        start: Progress hook: ``start(total)`` returns the function called per rollout.
        judge: Adds LLM verdicts to a recall score (run here, not in the workers).
        cluster: Score on Ray workers instead of local processes.
    """
    run = Run(run_dir)
    models = scoring_models(settings)  # a changed model file is refused before any work
    tasks = list(_tasks(run, systems))
    io.remove_temporaries(run.scores_dir)  # what a killed scoring left half-written
    digest = settings.digest()
    advance = start(len(tasks)) if start else (lambda: None)
    tallies: dict[str, ScoreTally] = {}
    todo = []
    for task in tasks:
        tally = tallies.setdefault(task.system, ScoreTally())
        if _kept(task, digest) is not None:
            tally.kept += 1
            advance()
        else:
            todo.append(task)

    def finish(task: _Task, data: dict[str, Any]) -> None:
        score = Score.from_dict(data)
        if judge is not None and score.recall is not None:
            score = judge(score)
        io.write_json(task.out, score.to_dict())
        tally = tallies[task.system]
        tally.scored += 1
        tally.no_audio += score.status is ScoreStatus.NO_AUDIO
        tally.transport_errors += score.status is ScoreStatus.TRANSPORT_ERROR
        advance()

    if todo:
        if cluster is not None:
            _score_on_ray(todo, settings, workers, cluster, finish)
        else:
            # No more processes than rollouts: each loads both models before its first.
            _score_here(todo, settings, min(workers or 2, len(todo)), finish)
    _assemble(run, sorted(tallies))
    _write_provenance(run, sorted(tallies), settings, models)
    return tallies


def scoring_models(settings: ScoreSettings) -> tuple[FileRecord, ...]:
    """Every bundled model file the settings score with, checked (``pmc.models.verify``)."""
    return tuple(r for m in (*models_of(settings.asr), Model.MINILM) for r in verify(m))


def provenance_path(run: Run, system: str) -> Path:
    """Where a system's scores say what produced them."""
    return run.scores_dir / f"{system}{PROVENANCE_SUFFIX}"


def _write_provenance(
    run: Run, systems: list[str], settings: ScoreSettings, models: tuple[FileRecord, ...]
) -> None:
    record = run.record
    for system in systems:
        card = record.systems[system].card.to_dict()
        made = Provenance.now(
            system, record.points_manifest_sha256, card, settings.to_dict(), models
        )
        io.write_json(provenance_path(run, system), made.to_dict())


def read_provenance(run_dir: Path, system: str) -> Provenance | None:
    """What produced a system's scores (None for scores made before pmc recorded it)."""
    path = provenance_path(Run(run_dir), system)
    return Provenance.from_dict(io.read_json(path)) if path.exists() else None


def _score_here(
    todo: list[_Task],
    settings: ScoreSettings,
    workers: int,
    finish: Callable[[_Task, dict[str, Any]], None],
) -> None:
    """Score in ``workers`` processes on this machine, one recogniser thread each.

    Always in worker processes, never in this one: OpenMP's thread count, read once when a
    library first loads it, changes Whisper's word times, so every worker must start with
    :data:`WORKER_ENV` (this process may have loaded those libraries already). The workers are
    kept for the next pass with the same recogniser (:mod:`pmc.scoring._pool`).
    """
    pool = scoring_pool(settings.asr, workers)
    data = settings.to_dict()
    futures = [
        (t, pool.submit(score_in_worker, t.folder, t.point, t.system, t.rollout, data))
        for t in todo
    ]
    try:
        for task, future in futures:
            finish(task, future.result())
    except BaseException as exc:
        for _, future in futures:
            future.cancel()
        if isinstance(exc, BrokenProcessPool):
            close_scoring_pool()  # a worker died: the next pass starts new ones
        raise


def _score_on_ray(
    todo: list[_Task],
    settings: ScoreSettings,
    workers: int | None,
    where: ScoringCluster,
    finish: Callable[[_Task, dict[str, Any]], None],
) -> None:
    ray = cluster.connect(where.address)
    if workers is None:
        resources = ray.cluster_resources()
        per = where.gpus_per_worker
        workers = int(resources.get("GPU", 0) / per) if per else int(resources.get("CPU", 1))
    if workers < 1:
        raise PmcError(f"--gpus-per-worker {where.gpus_per_worker}: the cluster has too few GPUs")
    pool = RayScoring(ray, settings.asr, workers, where.gpus_per_worker)
    jobs = [(t.folder, t.point, t.system, t.rollout) for t in todo]
    try:
        pool.score_all(jobs, settings.to_dict(), lambda i, data: finish(todo[i], data))
    finally:
        pool.close()


def _assemble(run: Run, systems: list[str]) -> None:
    """Write ``scores/<system>.jsonl``: every score of the system, in a fixed order."""
    for system in systems:
        folder = run.scores_dir / system
        scores = [Score.from_dict(io.read_json(p)) for p in folder.glob("*/*.json")]
        scores.sort(key=lambda s: (s.kind.value, s.point_id, s.rollout))
        with io.atomic_open(run.scores_dir / f"{system}.jsonl") as handle:
            for score in scores:
                handle.write(io.json_line(score.to_dict()))


def read_scores(run_dir: Path, system: str) -> list[Score]:
    """A system's scores, as ``pmc score`` wrote them."""
    path = Run(run_dir).scores_dir / f"{system}.jsonl"
    if not path.exists():
        raise PmcError(f"{path}: not scored yet; run `pmc score --run {run_dir}`")
    lines = path.read_text(encoding="utf-8").splitlines()
    return [Score.from_dict(json.loads(line)) for line in lines if line]
