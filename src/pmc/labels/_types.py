"""What the label stage produces: turns, pauses, turn ends, backchannels, overlaps, and more.

Also failed takes, and the talk that comes over a reply (barge-ins, backchannels during one).

Every time is on the conversation clock. Every label records the rule that placed it and a
confidence, and its id is derived from its content, never from a position in a list.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pmc.corpus import Channel, Word
from pmc.io import dumps, schema_version

LABELS_SCHEMA_VERSION = 1


class LabelKind(StrEnum):
    """What a label marks."""

    TURN = "turn"
    """A speaker holding the floor, from its first word to the offset that ends it."""
    PAUSE = "pause"
    """Silence inside a turn, after which the same speaker goes on."""
    END_OF_TURN = "end_of_turn"
    """The offset that ends a turn (an instant); carries the floor-transfer offset."""
    BACKCHANNEL = "backchannel"
    """A listener's short response during the other speaker's turn."""
    FAILED_TAKE = "failed_take"
    """A listener who started to speak in the other's pause, then yielded."""
    OVERLAP = "overlap"
    """Both speakers voiced at once; its speaker is the one who started second."""
    BARGE_IN = "barge_in"
    """A listener who starts talking over the other's reply, after which the replier stops and
    the listener holds the floor; from the listener's onset to the end of the replier's speech."""
    REPLY_BACKCHANNEL = "reply_backchannel"
    """A backchannel during the other's reply, which goes on; spans the backchannel."""


class Rule(StrEnum):
    """The rule of the engine (paper section 3.2) that placed a label."""

    TURN_SPAN = "turn: first speech after an end of turn, up to the next end of turn"
    PAUSE_SAME_SPEAKER_RESUMES = "offset: the same speaker resumes within the lookahead"
    PAUSE_FAILED_TAKE = "offset: the other speaker starts and yields"
    EOT_OTHER_SPEAKER_STARTS = "offset: the other speaker starts substantively"
    EOT_NOBODY_SPEAKS = "offset: nobody speaks within the lookahead"
    BACKCHANNEL_SHORT_SEGMENT = "segment: at most 1 s and two words during the other's turn"
    FAILED_TAKE_YIELDED = "segment: started in the other's pause and yielded"
    OVERLAP_BOTH_VOICED = "both speakers' voice activity at once"
    BARGE_IN_REPLIER_YIELDS = "talk-over: the other starts a turn inside a reply, which then ends"
    BACKCHANNEL_IN_REPLY = "talk-over: a backchannel inside a reply, which goes on"
    REVIEWER = "placed or corrected by a reviewer (pmc review)"


class Flag(StrEnum):
    """Why a label should be reviewed by a person (paper section 3.2, appendix B)."""

    GAP_FILL_WORDS = "half or more of the turn's words come from gap-fill ASR"
    SHORT_LEXICAL_TURN = "a turn with words that lasts under 400 ms"
    VAP_HOLD_AT_TURN_END = "the turn ended while the projection kept the speaker on the floor"
    VAP_HANDOVER_AT_BACKCHANNEL = "the projection handed the floor over at a backchannel"
    TERMINAL_OVERLAP = "the replier stopped so soon after the barge-in that it may have been ending"


def label_id(conversation_id: str, speaker: Channel | None, kind: LabelKind, start: float) -> str:
    """A stable id from the label's content: conversation, speaker, kind and time (to the ms)."""
    who = speaker.value if speaker else "-"
    key = f"{conversation_id}|{who}|{kind.value}|{start:.3f}"
    return f"{kind.value}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


TALK_OVER_MEASURES = ("reply_offset_s", "yield_s", "talk_over_s", "kept_talking_s")
"""The fields a barge-in or a backchannel during a reply carries (docs/labels.md)."""


def _seconds(value: Any) -> float | None:
    return None if value is None else float(value)


@dataclass(frozen=True)
class Label:
    """One label on the conversation clock.

    Attributes:
        id: Stable id (see :func:`label_id`).
        kind: What it marks.
        speaker: Whose it is (for an overlap, who started second).
        start_conv_s: Start; for an end of turn, the offset itself.
        end_conv_s: End; equal to the start for an end of turn.
        rule: The rule that placed it.
        confidence: How clear-cut the rule's decision was, 0 to 1.
        flags: Reasons a person should review it.
        text: The words inside it, for turns, backchannels and failed takes.
        words: How many words it holds.
        gap_fill_words: How many of them came from gap-fill ASR.
        floor_transfer_s: For an end of turn handed to the other speaker: their start minus this
            offset (negative when they started first).
        reply_offset_s: For a barge-in or a backchannel during a reply: its onset minus the
            reply's start.
        yield_s: For a barge-in: from its onset to the end of the replier's speech.
        talk_over_s: For a barge-in: how long both spoke at once from its onset.
        kept_talking_s: For a backchannel during a reply: from its onset to the end of the reply.
    """

    id: str
    kind: LabelKind
    speaker: Channel | None
    start_conv_s: float
    end_conv_s: float
    rule: Rule
    confidence: float
    flags: tuple[Flag, ...] = ()
    text: str = ""
    words: int = 0
    gap_fill_words: int = 0
    floor_transfer_s: float | None = None
    reply_offset_s: float | None = None
    yield_s: float | None = None
    talk_over_s: float | None = None
    kept_talking_s: float | None = None

    @property
    def duration_s(self) -> float:
        """Length in seconds."""
        return self.end_conv_s - self.start_conv_s

    def content_sha256(self) -> str:
        """A hash of everything the label says: a review decision records the one it judged."""
        return hashlib.sha256(dumps(self.to_dict()).encode()).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form; the talk-over measures only where set.

        Other labels' forms stay as they were, and so does the hash a review decision recorded.
        """
        measures = {name: getattr(self, name) for name in TALK_OVER_MEASURES}
        return {
            **{name: value for name, value in measures.items() if value is not None},
            "id": self.id,
            "kind": self.kind.value,
            "speaker": self.speaker.value if self.speaker else None,
            "start_conv_s": self.start_conv_s,
            "end_conv_s": self.end_conv_s,
            "rule": self.rule.name,
            "confidence": self.confidence,
            "flags": [f.name for f in self.flags],
            "text": self.text,
            "words": self.words,
            "gap_fill_words": self.gap_fill_words,
            "floor_transfer_s": self.floor_transfer_s,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Label:
        """Inverse of :meth:`to_dict`."""
        return cls(
            id=str(data["id"]),
            kind=LabelKind(data["kind"]),
            speaker=Channel(data["speaker"]) if data.get("speaker") else None,
            start_conv_s=float(data["start_conv_s"]),
            end_conv_s=float(data["end_conv_s"]),
            rule=Rule[data["rule"]],
            confidence=float(data["confidence"]),
            flags=tuple(Flag[f] for f in data.get("flags", [])),
            text=str(data.get("text", "")),
            words=int(data.get("words", 0)),
            gap_fill_words=int(data.get("gap_fill_words", 0)),
            floor_transfer_s=data.get("floor_transfer_s"),
            **{name: _seconds(data.get(name)) for name in TALK_OVER_MEASURES},
        )


@dataclass(frozen=True)
class Labels:
    """All labels of one conversation, with the engine settings that produced them."""

    conversation_id: str
    duration_s: float
    labels: tuple[Label, ...]
    settings: dict[str, Any] = field(default_factory=dict)
    """The engine's parameters and plug-ins (gap-fill ASR, projector), so a run can be rebuilt."""
    filled_words: dict[Channel, tuple[Word, ...]] = field(default_factory=dict)
    """Words gap fill added per speaker (the corpus keeps only the source's own words)."""
    schema_version: int = LABELS_SCHEMA_VERSION

    def of(self, kind: LabelKind, speaker: Channel | None = None) -> list[Label]:
        """Labels of one kind, optionally of one speaker, in time order."""
        return [
            label
            for label in self.labels
            if label.kind is kind and (speaker is None or label.speaker is speaker)
        ]

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form, with the schema version."""
        return {
            "schema_version": self.schema_version,
            "conversation_id": self.conversation_id,
            "duration_s": self.duration_s,
            "settings": self.settings,
            "filled_words": {
                c.value: [w.to_dict() for w in words]
                for c, words in sorted(self.filled_words.items())
            },
            "labels": [label.to_dict() for label in self.labels],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Labels:
        """Inverse of :meth:`to_dict`; refuses a schema version it does not know."""
        version = schema_version(data, LABELS_SCHEMA_VERSION, "labels")
        return cls(
            conversation_id=str(data["conversation_id"]),
            duration_s=float(data["duration_s"]),
            labels=tuple(Label.from_dict(d) for d in data["labels"]),
            settings=dict(data.get("settings", {})),
            filled_words={
                Channel(c): tuple(Word.from_dict(w) for w in words)
                for c, words in data.get("filled_words", {}).items()
            },
            schema_version=version,
        )
