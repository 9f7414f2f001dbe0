"""Behaviours measured point by point, paired between two runs on the same points.

Each :class:`Measure` reads one value per scored point (rollout 0); :func:`paired` lines a
system's values up across two runs, point by point, for a run against its twin
(:mod:`pmc.report._twin`) and for a run against its baseline (``pmc check``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pmc.points import PointKind
from pmc.report._aggregate import clip_stop_s, clip_yielded, reply_field, strict_correct
from pmc.report._data import RunData
from pmc.report._pauses import takeover
from pmc.scoring import Score

SAME_WITHIN = 0.005
"""Two values closer than this count as unchanged: they print the same at the report's two
decimals (a rate's difference at one point is 0 or 1, so rates must match exactly)."""


@dataclass(frozen=True)
class Measure:
    """One behaviour compared between the runs, at one kind of point."""

    key: str
    label: str
    kind: PointKind
    value: Callable[[Score], float | None]


def _hold(s: Score) -> float:
    return 0.0 if takeover(s) else 1.0


def _recalled(s: Score) -> float:
    return float(bool(strict_correct(s)))


def _yielded(s: Score) -> float | None:
    yielded = clip_yielded(s)
    return None if yielded is None else float(yielded)


MEASURES = (
    Measure("hold", "hold rate at pauses", PointKind.PAUSE, _hold),
    Measure("latency_s", "turn-end latency, s", PointKind.TURN_END, reply_field("latency_s")),
    Measure("duration_ratio", "duration ratio", PointKind.TURN_END, reply_field("duration_ratio")),
    Measure("cosine", "similarity (cosine)", PointKind.TURN_END, reply_field("cosine")),
    Measure("fact_recall", "fact recall (strict)", PointKind.FACT_RECALL, _recalled),
    Measure(
        "conversation_recall",
        "conversation recall (strict)",
        PointKind.CONVERSATION_RECALL,
        _recalled,
    ),
)
"""What the context ablation and ``pmc check``'s regressions compare."""

CLIP_MEASURES = (
    Measure("barge_in_yield", "yield rate at barge-ins", PointKind.BARGE_IN, _yielded),
    Measure("barge_in_stop_s", "stop latency at barge-ins, s", PointKind.BARGE_IN, clip_stop_s),
    Measure(
        "backchannel_yield", "false yield rate at backchannels", PointKind.BACKCHANNEL, _yielded
    ),
)
"""At talk-over points, where the system was talking when the person's clip came: whether it
yielded (at a backchannel, a false yield) and how soon it stopped (where it stopped at all).
What the person's clip sounds like through a condition is what these test."""


@dataclass(frozen=True)
class Paired:
    """One system's measure on the points scored in both runs."""

    system: str
    measure: Measure
    base: list[float]
    ablated: list[float]
    """The other run's values: the ablated or conditioned twin, or the run under check."""
    by_conversation: dict[str, list[float]]
    """Each conversation's differences (other minus base), for the bootstrap."""

    @property
    def changed(self) -> int:
        """Points where the two runs differ by more than :data:`SAME_WITHIN`."""
        return sum(abs(a - b) >= SAME_WITHIN for a, b in zip(self.ablated, self.base, strict=True))

    @property
    def differences(self) -> list[float]:
        """The other run's value minus the base run's, point by point."""
        return [a - b for a, b in zip(self.ablated, self.base, strict=True)]


def paired(base: RunData, ablated: RunData, system: str, measure: Measure) -> Paired:
    """A system's measure at the points both runs scored (rollout 0, failures left out)."""
    theirs = {s.point_id: s for s in ablated.first(system, measure.kind)}
    out = Paired(system, measure, [], [], {})
    for s in base.first(system, measure.kind):
        other = theirs.get(s.point_id)
        if other is None:
            continue
        b, a = measure.value(s), measure.value(other)
        if a is None or b is None:
            continue
        out.base.append(b)
        out.ablated.append(a)
        out.by_conversation.setdefault(s.conversation_id, []).append(a - b)
    return out
