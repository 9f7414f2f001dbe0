"""Scoring on Ray workers: each loads the recogniser once and scores rollouts shipped to it.

The driver reads each rollout's files and sends their bytes; a worker lays them out in a
temporary folder and scores them exactly as a local worker does, so no shared filesystem is
needed and the scores are the same (docs/scaling.md). A worker that dies is replaced and its
rollouts are sent again.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pmc.points import Point
from pmc.scoring._worker import WORKER_ENV, init_worker, score_in_worker

IN_FLIGHT_PER_WORKER = 2
"""Rollouts sent ahead to each worker: one scoring, one waiting, so none idles between them."""


class ScoreWorker:
    """One scoring process on the cluster (a Ray actor)."""

    def __init__(self, asr: str) -> None:
        init_worker(asr)

    def score(
        self,
        files: dict[str, bytes],
        point: Point,
        system: str,
        rollout: int,
        settings: dict[str, Any],
    ) -> dict[str, Any]:
        """Score the rollout whose files are ``files`` (name to bytes)."""
        with tempfile.TemporaryDirectory(prefix="pmc-score-") as folder:
            for name, data in files.items():
                (Path(folder) / name).write_bytes(data)
            return score_in_worker(Path(folder), point, system, rollout, settings)


ScoreJob = tuple[Path, Point, str, int]
"""A rollout to score: its folder (on the driver), point, system and rollout number."""


def read_files(folder: Path) -> dict[str, bytes]:
    """A rollout folder's files, by name (the driver's side of shipping it)."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


class RayScoring:
    """``workers`` Ray scoring workers, each with ``gpus`` GPUs (0: on CPUs)."""

    def __init__(self, ray: Any, asr: str, workers: int, gpus: float) -> None:
        self._ray = ray
        self._asr = asr
        self._options: dict[str, Any] = {
            "num_cpus": 1,
            "num_gpus": gpus,
            "max_restarts": 0,
            "runtime_env": {"env_vars": WORKER_ENV},  # as local workers: the same word times
        }
        self._remote = ray.remote(ScoreWorker)
        self._lost = (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError)
        self._workers = [self._spawn() for _ in range(workers)]

    def _spawn(self) -> Any:
        return self._remote.options(**self._options).remote(self._asr)

    def score_all(
        self,
        jobs: Sequence[ScoreJob],
        settings: dict[str, Any],
        finish: Callable[[int, dict[str, Any]], None],
    ) -> None:
        """Score every job; ``finish(index, score)`` as each comes back, in any order."""
        ray = self._ray
        pending = list(range(len(jobs)))[::-1]
        running: dict[Any, tuple[int, Any]] = {}  # result ref -> (job index, worker)

        def fill() -> None:
            """Keep every live worker :data:`IN_FLIGHT_PER_WORKER` rollouts ahead."""
            for worker in self._workers:
                load = sum(1 for _, w in running.values() if w is worker)
                for _ in range(IN_FLIGHT_PER_WORKER - load):
                    if not pending:
                        return
                    index = pending.pop()
                    folder, point, system, rollout = jobs[index]
                    ref = worker.score.remote(read_files(folder), point, system, rollout, settings)
                    running[ref] = (index, worker)

        fill()
        while running:
            [ref], _ = ray.wait(list(running), num_returns=1)
            index, worker = running.pop(ref)
            try:
                result = ray.get(ref)
            except self._lost:
                pending.append(index)  # sent again, to a live worker
                if worker in self._workers:
                    self._workers.remove(worker)
                    self._workers.append(self._spawn())
            else:
                finish(index, result)
            fill()

    def close(self) -> None:
        for worker in self._workers:
            self._ray.kill(worker)
        self._workers.clear()
