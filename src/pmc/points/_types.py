"""What the points stage produces: the moments every system is put at (paper section 3.3).

Times are on the conversation clock (``*_conv_s``) and, for what the system hears live, also on
the stream clock (``*_stream_s``: seconds from the first sample of the live stream, the active
turn's start), as docs/architecture.md "Clocks" asks.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pmc.corpus import Channel
from pmc.io import schema_version

POINT_SCHEMA_VERSION = 2
"""2: the talk-over kinds and their clip (``inject_*``, ``person_*``); version 1 still reads."""


class PointKind(StrEnum):
    """The kinds of evaluation point; results are never pooled across them."""

    PAUSE = "pause"
    TURN_END = "turn_end"
    CONVERSATION_RECALL = "conversation_recall"
    FACT_RECALL = "fact_recall"
    BARGE_IN = "barge_in"
    """A turn end whose reply the other speaker talked over, and the replier gave up the floor."""
    BACKCHANNEL = "backchannel"
    """A turn end whose reply the other speaker backchannelled into, and the replier went on."""

    @property
    def talks_over(self) -> bool:
        """The person's clip is played over the system's reply (docs/architecture.md "Protocol")."""
        return self in (PointKind.BARGE_IN, PointKind.BACKCHANNEL)

    @property
    def replies(self) -> bool:
        """A turn end the system replies to: the turn end itself and the talk-over kinds."""
        return self is PointKind.TURN_END or self.talks_over


TALK_OVER_FIELDS = (
    "inject_conv_s",
    "inject_offset_s",
    "inject_text",
    "person_yield_s",
    "person_talk_over_s",
    "person_kept_talking_s",
    "person_next_text",
)
"""A point's fields that only the talk-over kinds set."""


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def point_id(conversation_id: str, kind: PointKind, at_conv_s: float, extra: str = "") -> str:
    """A stable id from the point's content: conversation, kind, boundary time (to the ms)."""
    key = f"{conversation_id}|{kind.value}|{at_conv_s:.3f}|{extra}"
    return f"{kind.value}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


@dataclass(frozen=True)
class JudgeVerdict:
    """What the LLM judge said of a candidate; stored with its model and prompt version."""

    model: str
    prompt_version: str
    accept: bool
    score: float
    """0 to 1; a score of zero is never selected (paper section 3.3)."""
    reason: str
    raw: str

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "model": self.model,
            "prompt_version": self.prompt_version,
            "accept": self.accept,
            "score": self.score,
            "reason": self.reason,
            "raw": self.raw,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JudgeVerdict:
        """Inverse of :meth:`to_dict`."""
        return cls(
            str(data["model"]),
            str(data["prompt_version"]),
            bool(data["accept"]),
            float(data["score"]),
            str(data["reason"]),
            str(data["raw"]),
        )


@dataclass(frozen=True)
class Point:
    """One evaluation point.

    Attributes:
        point_id: Stable id from content.
        kind: Pause, turn end, conversation recall or fact recall.
        conversation_id: The conversation it comes from.
        user: The speaker the system listens to (the active turn's speaker; for recall, B).
        system: The speaker the system plays (the other one; for recall, A).
        history_start_conv_s: Start of the history the system is given (capped, snapped to a
            turn start).
        stream_start_conv_s: First sample of the live stream (the active turn's start; for
            recall, the end of the history).
        boundary_conv_s: The moment under test: a pause's start, a turn's end, the question's
            end (for recall, on the stream of the spoken question).
        boundary_stream_s: The same on the stream clock.
        boundary_end_conv_s: A pause's end (the speaker resumes); equal to the boundary otherwise.
        boundary_end_stream_s: The same on the stream clock.
        stream_end_conv_s: Where the live audio taken from the conversation ends.
        reply_start_conv_s: The person's reply (turn end): start; None for other kinds.
        reply_end_conv_s: The person's reply: end.
        reply_text: What the person said (the human reference), or the gold answer for recall.
        question: The spoken question (recall points).
        gold_answer: The answer a correct reply states (recall points).
        prefix_s: The history length asked for (recall points: 30, 60, 90 or 120 s).
        features: Curation features (paper appendix A).
        heuristic_score: The weighted sum of capped features.
        judge: The judge's verdict, if a judge ran.
        identity_prompt: Who the system is (docs/architecture.md "Protocol").
        cuts: Audio and text files of the point, relative to ``points/``.
        inject_conv_s: Talk-over kinds: where the person's clip (``cuts["inject"]``) begins on
            the conversation clock.
        inject_offset_s: Talk-over kinds: when the person's clip began after the onset of the
            reply it came over (as the gate finds it, :mod:`pmc.points._measure`); the harness
            plays it that long after the system's own reply starts.
        inject_text: What the clip says.
        person_yield_s: Barge-in: from the clip's onset to the end of the replier's speech.
        person_talk_over_s: Barge-in: how long both spoke at once from the clip's onset.
        person_kept_talking_s: Backchannel: from the clip's onset to the end of the reply.
        person_next_text: What the person said after the clip: the rest of the reply after a
            backchannel, the next turn they took after a barge-in.
    """

    point_id: str
    kind: PointKind
    conversation_id: str
    user: Channel
    system: Channel
    history_start_conv_s: float
    stream_start_conv_s: float
    boundary_conv_s: float
    boundary_stream_s: float
    boundary_end_conv_s: float
    boundary_end_stream_s: float
    stream_end_conv_s: float
    reply_start_conv_s: float | None = None
    reply_end_conv_s: float | None = None
    reply_text: str = ""
    question: str = ""
    gold_answer: str = ""
    prefix_s: float | None = None
    features: dict[str, float] = field(default_factory=dict)
    heuristic_score: float = 0.0
    judge: JudgeVerdict | None = None
    identity_prompt: str = ""
    cuts: dict[str, str] = field(default_factory=dict)
    inject_conv_s: float | None = None
    inject_offset_s: float | None = None
    inject_text: str = ""
    person_yield_s: float | None = None
    person_talk_over_s: float | None = None
    person_kept_talking_s: float | None = None
    person_next_text: str = ""
    schema_version: int = POINT_SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form, with the schema version; the talk-over fields only where set."""
        talk_over = {
            name: getattr(self, name)
            for name in TALK_OVER_FIELDS
            if getattr(self, name) not in (None, "")
        }
        return {
            "schema_version": self.schema_version,
            "point_id": self.point_id,
            "kind": self.kind.value,
            "conversation_id": self.conversation_id,
            "user": self.user.value,
            "system": self.system.value,
            "history_start_conv_s": self.history_start_conv_s,
            "stream_start_conv_s": self.stream_start_conv_s,
            "boundary_conv_s": self.boundary_conv_s,
            "boundary_stream_s": self.boundary_stream_s,
            "boundary_end_conv_s": self.boundary_end_conv_s,
            "boundary_end_stream_s": self.boundary_end_stream_s,
            "stream_end_conv_s": self.stream_end_conv_s,
            "reply_start_conv_s": self.reply_start_conv_s,
            "reply_end_conv_s": self.reply_end_conv_s,
            "reply_text": self.reply_text,
            "question": self.question,
            "gold_answer": self.gold_answer,
            "prefix_s": self.prefix_s,
            "features": dict(sorted(self.features.items())),
            "heuristic_score": self.heuristic_score,
            "judge": self.judge.to_dict() if self.judge else None,
            "identity_prompt": self.identity_prompt,
            "cuts": dict(sorted(self.cuts.items())),
            **talk_over,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Point:
        """Inverse of :meth:`to_dict`; refuses a schema version it does not know."""
        older = data.get("schema_version") == 1  # version 1 is version 2 without talk-over kinds
        version = 1 if older else schema_version(data, POINT_SCHEMA_VERSION, "point")
        judge = data.get("judge")
        return cls(
            point_id=str(data["point_id"]),
            kind=PointKind(data["kind"]),
            conversation_id=str(data["conversation_id"]),
            user=Channel(data["user"]),
            system=Channel(data["system"]),
            history_start_conv_s=float(data["history_start_conv_s"]),
            stream_start_conv_s=float(data["stream_start_conv_s"]),
            boundary_conv_s=float(data["boundary_conv_s"]),
            boundary_stream_s=float(data["boundary_stream_s"]),
            boundary_end_conv_s=float(data["boundary_end_conv_s"]),
            boundary_end_stream_s=float(data["boundary_end_stream_s"]),
            stream_end_conv_s=float(data["stream_end_conv_s"]),
            reply_start_conv_s=data.get("reply_start_conv_s"),
            reply_end_conv_s=data.get("reply_end_conv_s"),
            reply_text=str(data.get("reply_text", "")),
            question=str(data.get("question", "")),
            gold_answer=str(data.get("gold_answer", "")),
            prefix_s=data.get("prefix_s"),
            features={str(k): float(v) for k, v in data.get("features", {}).items()},
            heuristic_score=float(data.get("heuristic_score", 0.0)),
            judge=JudgeVerdict.from_dict(judge) if judge else None,
            identity_prompt=str(data.get("identity_prompt", "")),
            cuts={str(k): str(v) for k, v in data.get("cuts", {}).items()},
            inject_conv_s=_float(data.get("inject_conv_s")),
            inject_offset_s=_float(data.get("inject_offset_s")),
            inject_text=str(data.get("inject_text", "")),
            person_yield_s=_float(data.get("person_yield_s")),
            person_talk_over_s=_float(data.get("person_talk_over_s")),
            person_kept_talking_s=_float(data.get("person_kept_talking_s")),
            person_next_text=str(data.get("person_next_text", "")),
            schema_version=version,
        )
