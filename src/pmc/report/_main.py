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


@dataclass(frozen=True)
class FirstLook:
    """One system's scores at a glance: the main table's estimates, without intervals.

    Attributes:
        system: The system card's name.
        pause: Its pause rows' silent, takeover and after shares (None where it had no pauses).
        latency: Its median turn-end latency to the first word.
        recall: Its strict conversation-recall accuracy after 120 s of history.
        no_audio: Points where it sent no audio, over every kind.
        untranscribed: Points heard without words, over every kind.
        failed: Points whose rollout 0 failed, over every kind.
    """

    system: str
    pause: tuple[Value, Value, Value] | None
    latency: Value | None
    recall: Value | None
    no_audio: int
    untranscribed: int
    failed: int


def first_look(data: RunData, systems: Sequence[str] | None = None) -> list[FirstLook]:
    """What ``pmc score`` prints of ``systems`` (all of the run's), by the main table's rules."""
    rows = main_table(data, resamples=0)
    out = []
    for system in sorted(systems if systems is not None else data.systems):
        mine = {r.kind: r for r in rows if r.system == system}
        pause = mine.get(PointKind.PAUSE)
        turn_end = mine.get(PointKind.TURN_END)
        recall = mine.get(PointKind.CONVERSATION_RECALL)
        out.append(
            FirstLook(
                system,
                (pause.values["silent"], pause.values["takeover"], pause.values["after"])
                if pause
                else None,
                turn_end.values["latency_s"] if turn_end else None,
                recall.values["strict"] if recall else None,
                sum(r.no_audio for r in mine.values()),
                sum(r.untranscribed for r in mine.values()),
                sum(r.failed for r in mine.values()),
            )
        )
    return out
