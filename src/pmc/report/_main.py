"""The main table (paper Table 3, with Table 14's intervals) of one run, per system and kind."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pmc.points import Point, PointKind
from pmc.report._aggregate import RECALL_PREFIX_S, RESAMPLES, Value, bootstrap, metrics_for, scored
from pmc.report._data import RunData
from pmc.scoring import Score, ScoreStatus
from pmc.systems import ReferenceRow


@dataclass(frozen=True)
class MainRow:
    """One system at one kind of point.

    Attributes:
        system: The system card's name.
        kind: The point kind (never pooled).
        points: Points with a scored rollout 0.
        failed: Points whose rollout 0 failed (transport errors, left out).
        no_audio: Points where the system sent no audio.
        values: Each metric's value, quartiles and interval.
        reference: The reference row it is, if it is one.
        untranscribed: Points where the gate heard speech after the boundary and the
            recogniser no words (counted in the rates as no reply, and shown here as heard).
    """

    system: str
    kind: PointKind
    points: int
    failed: int
    no_audio: int
    values: dict[str, Value]
    reference: ReferenceRow | None = None
    untranscribed: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "system": self.system,
            "kind": self.kind.value,
            "points": self.points,
            "failed": self.failed,
            "no_audio": self.no_audio,
            "untranscribed": self.untranscribed,
            "values": {k: v.to_dict() for k, v in self.values.items()},
            "reference": None if self.reference is None else self.reference.value,
        }


def _judges(scores: Sequence[Score]) -> list[str]:
    return sorted({j.model for s in scores if s.recall for j in s.recall.judges})


def row(
    system: str,
    kind: PointKind,
    scores: Sequence[Score],
    points: dict[str, Point],
    seed: int,
    resamples: int = RESAMPLES,
    reference: ReferenceRow | None = None,
) -> MainRow:
    """The row of one system at one kind (recall: the 120 s prefix only)."""
    mine = [s for s in scores if s.kind is kind and s.rollout == 0]
    if kind in (PointKind.CONVERSATION_RECALL, PointKind.FACT_RECALL):
        mine = [s for s in mine if points[s.point_id].prefix_s == RECALL_PREFIX_S]
    kept = scored(mine)
    values = bootstrap(kept, metrics_for(kind, _judges(kept)), seed, resamples)
    return MainRow(
        system,
        kind,
        len(kept),
        sum(s.status is ScoreStatus.TRANSPORT_ERROR for s in mine),
        sum(s.status is ScoreStatus.NO_AUDIO for s in kept),
        values,
        reference,
        sum(s.status is ScoreStatus.UNTRANSCRIBED for s in kept),
    )


def main_table(data: RunData, seed: int = 0, resamples: int = RESAMPLES) -> list[MainRow]:
    """Every system of the run at every kind it was scored on, the reference rows last."""
    return [
        row(
            system, kind, data.scores[system], data.points, seed, resamples, data.references[system]
        )
        for system in data.systems
        for kind in data.kinds(system)
    ]
