"""What the exports read: each system's scored rollouts at one rollout index, with their points."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pmc.errors import PmcError
from pmc.harness import Run
from pmc.points import Point, read_points
from pmc.scoring import Score, ScoreStatus, read_scores

EXPORTED_STATUSES = frozenset({ScoreStatus.SCORED, ScoreStatus.UNTRANSCRIBED, ScoreStatus.NO_AUDIO})
"""The scores an export carries: every finished rollout. A silent one stays in (no words, a
silent track): holding a pause or never replying is a decision the peers' scorers count. Only
a failed rollout (no trace) is left out."""


@dataclass(frozen=True)
class Rollout:
    """One scored rollout to export.

    Attributes:
        system: The card's name.
        point: Its point (times on the conversation and stream clocks).
        score: Its score (word and gate times on the stream clock).
        folder: Its rollout folder (``played.flac``, ``trace.json``).
    """

    system: str
    point: Point
    score: Score
    folder: Path


@dataclass(frozen=True)
class RunRollouts:
    """A run's scored rollouts at one rollout index.

    Attributes:
        run: The run folder.
        rollout: The rollout index exported (0: the first of each point).
        rollouts: By system, then point id.
        skipped: One line per rollout left out, saying why.
    """

    run: Run
    rollout: int
    rollouts: tuple[Rollout, ...]
    skipped: tuple[str, ...]


def run_rollouts(run_dir: Path, rollout: int = 0) -> RunRollouts:
    """Every system's scored rollouts of ``run_dir`` at index ``rollout``.

    Raises :class:`PmcError` naming the file when the run has no record, a system is not
    scored, or its points manifest is missing.
    """
    run = Run(run_dir)
    systems = sorted(run.record.systems)
    points = {p.point_id: p for p in read_points(run.workdir)}
    found: list[Rollout] = []
    skipped: list[str] = []
    for system in systems:
        if not (run.rollouts_dir / system).is_dir():
            continue
        for score in sorted(read_scores(run_dir, system), key=lambda s: s.point_id):
            if score.rollout != rollout:
                continue
            point = points.get(score.point_id)
            if point is None:
                raise PmcError(
                    f"{run.workdir / 'points'}: point {score.point_id} of {system}'s scores is "
                    "not in the points manifest (the points were rebuilt after the run)"
                )
            if score.status not in EXPORTED_STATUSES:
                skipped.append(f"{system} {score.point_id}: {score.status.value}")
                continue
            folder = run.rollout_dir(system, score.point_id, rollout)
            found.append(Rollout(system, point, score, folder))
    return RunRollouts(run, rollout, tuple(found), tuple(skipped))
