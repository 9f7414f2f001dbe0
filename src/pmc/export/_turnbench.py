"""TurnBench predictions and gold from pmc's rollouts (docs/exports.md "TurnBench").

TurnBench scores, per conversation and speaker, the times a model commits to "this speaker's
turn has ended" (``eot``) against gold turn ends (hits within -0.25/+3.0 s) and mid-turn pauses
(a fire inside one is a false positive). A pmc rollout is one session at one point, so each
exported TurnBench conversation is one point (its id is the point's id), on its conversation's
clock (``*_conv_s``), with that point's event as the only gold: a turn end is a positive, a
pause a negative span. The system's decisions are the onsets of its stretches of talk: each is
the moment it committed to speaking, that is, to the person's turn having ended.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pmc.corpus import Channel
from pmc.points import Point, PointKind
from pmc.scoring import Score, talk_stretches

SCHEMA_VERSION = 1
"""TurnBench's predictions format version (``schema_version``, always 1)."""
TAU_PRE_S = 0.25
"""TurnBench's matching tolerance before a gold event (carried in the gold file)."""
TAU_MAX_S = 3.0
"""TurnBench's latency deadline after a gold event (carried in the gold file)."""
TIME_DIGITS = 4

SPEAKERS = {Channel.A: 1, Channel.B: 2}
"""TurnBench's ``speaker_1`` and ``speaker_2`` are the conversation's channels A and B."""

EXPORTED_KINDS = frozenset({PointKind.PAUSE, PointKind.TURN_END, PointKind.BARGE_IN})
EXPORTED_KINDS |= {PointKind.BACKCHANNEL}
"""Kinds with a place on the conversation clock and an end-of-turn event: pauses (negatives)
and the turn ends (positives; the talk-over kinds are turn ends too). Recall points stream a
spoken question that is not in the conversation, so they have no conversation time."""


def _t(seconds: float) -> float:
    return round(float(seconds), TIME_DIGITS)


def conv_s(point: Point, stream_s: float) -> float:
    """A time on a point's stream clock on its conversation's clock."""
    return point.stream_start_conv_s + stream_s


def eot_times_conv_s(point: Point, score: Score) -> list[float]:
    """The rollout's end-of-turn decisions: each stretch of talk's onset, conversation clock.

    Strictly increasing (TurnBench refuses anything else): onsets that round to the same time
    are one decision.
    """
    onsets = sorted({_t(conv_s(point, s.onset_stream_s)) for s in talk_stretches(score.evidence)})
    return [t for t in onsets if t >= 0.0]


@dataclass(frozen=True)
class GoldConversation:
    """One point's gold, TurnBench's ``ConversationEvents`` on the conversation clock.

    Attributes:
        point_id: The point (TurnBench's conversation id).
        duration_s: The end of the point's live audio or of its last exported decision, whichever
            is later (TurnBench refuses a time past a conversation's duration).
        eot_positive: A turn end: (speaker, time) of the person's turn end.
        eot_negative: A pause: (speaker, start, end) from the person stopping to resuming.
    """

    point_id: str
    duration_s: float
    eot_positive: tuple[tuple[int, float], ...]
    eot_negative: tuple[tuple[int, float, float], ...]

    def to_dict(self) -> dict[str, Any]:
        """The shape of a conversation in TurnBench's exported gold (``eval.gold export``)."""
        return {
            "duration_s": _t(self.duration_s),
            "eot_positive_events": [{"speaker": s, "time_s": _t(t)} for s, t in self.eot_positive],
            "eot_negative_spans": [
                {"speaker": s, "start": _t(a), "end": _t(b)} for s, a, b in self.eot_negative
            ],
            "int_positive_events": [],
            "int_negative_spans": [],
            "eot_excluded": [],
            "int_excluded": [],
        }


def gold_for(point: Point, duration_s: float) -> GoldConversation:
    """The point's own event as TurnBench gold, on the listened-to speaker's channel."""
    speaker = SPEAKERS[point.user]
    if point.kind is PointKind.PAUSE:
        span = ((speaker, point.boundary_conv_s, point.boundary_end_conv_s),)
        return GoldConversation(point.point_id, duration_s, (), span)
    return GoldConversation(point.point_id, duration_s, ((speaker, point.boundary_conv_s),), ())


def prediction(point: Point, score: Score) -> dict[str, Any]:
    """One entry of ``predictions``: the decisions on the person's channel, none on the other.

    A silent rollout gives empty lists, as TurnBench asks where nothing was detected.
    """
    times = eot_times_conv_s(point, score)
    entry: dict[str, Any] = {"conversation_id": point.point_id}
    for channel, number in SPEAKERS.items():
        eot = times if channel is point.user else []
        entry[f"speaker_{number}"] = {"eot": eot, "interruption": []}
    return entry


def predictions_file(entries: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """A whole predictions file."""
    return {"schema_version": SCHEMA_VERSION, "predictions": list(entries)}


def gold_file(golds: Iterable[GoldConversation], run_id: str, points_sha256: str) -> dict[str, Any]:
    """The gold in the shape of TurnBench's ``eval.gold export`` artifact.

    ``scorer_sha`` names what made it (pmc, not TurnBench's gold builder) and
    ``dataset_revision`` the points manifest it was made from.
    """
    return {
        "scorer_sha": f"pmc export of run {run_id}",
        "dataset_revision": points_sha256,
        "tau_pre_s": TAU_PRE_S,
        "tau_max_s": TAU_MAX_S,
        "conversations": {g.point_id: g.to_dict() for g in golds},
    }
