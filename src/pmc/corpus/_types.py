"""What the corpus stage produces: two-speaker conversations, each side with audio, words, activity.

Every time here is on the conversation clock: seconds from the first sample of the conversation's
audio (docs/architecture.md "Clocks"); the field names say so (``start_conv_s``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from pmc.audio import AudioRef
from pmc.io import schema_version

CONVERSATION_SCHEMA_VERSION = 1


class WordSource(StrEnum):
    """Where a word's text and times came from."""

    TRANSCRIPT = "transcript"
    """The source's own transcript (Seamless Interaction's aligned words, a user's words file)."""
    SYNTHESIS = "synthesis"
    """Placed by the demo synthesiser, so its times are exact."""
    GAP_FILL = "gap_fill"
    """Transcribed by our ASR in a voiced stretch the transcript left empty (paper section 3.2)."""


class SourceKind(StrEnum):
    """Which corpus reader produced a conversation."""

    SEAMLESS = "seamless"
    FOLDER = "folder"
    DEMO = "demo"


class Channel(StrEnum):
    """The two sides of a conversation; A is the speaker the system later plays (paper 3.3)."""

    A = "A"
    B = "B"

    @property
    def other(self) -> Channel:
        """The other side of the conversation."""
        return Channel.B if self is Channel.A else Channel.A


@dataclass(frozen=True)
class Word:
    """One spoken word with its times on the conversation clock."""

    text: str
    start_conv_s: float
    end_conv_s: float
    source: WordSource = WordSource.TRANSCRIPT
    score: float | None = None
    """The source's confidence, where it gives one."""

    @property
    def duration_s(self) -> float:
        """Length of the word in seconds."""
        return self.end_conv_s - self.start_conv_s

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        data: dict[str, Any] = {
            "text": self.text,
            "start_conv_s": self.start_conv_s,
            "end_conv_s": self.end_conv_s,
            "source": self.source.value,
        }
        if self.score is not None:
            data["score"] = self.score
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Word:
        """Inverse of :meth:`to_dict`."""
        score = data.get("score")
        return cls(
            text=str(data["text"]),
            start_conv_s=float(data["start_conv_s"]),
            end_conv_s=float(data["end_conv_s"]),
            source=WordSource(data.get("source", WordSource.TRANSCRIPT.value)),
            score=None if score is None else float(score),
        )


@dataclass(frozen=True)
class Activity:
    """One stretch of voice activity, as the source's voice activity detector marked it."""

    start_conv_s: float
    end_conv_s: float

    @property
    def duration_s(self) -> float:
        """Length of the stretch in seconds."""
        return self.end_conv_s - self.start_conv_s

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {"start_conv_s": self.start_conv_s, "end_conv_s": self.end_conv_s}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Activity:
        """Inverse of :meth:`to_dict`."""
        return cls(float(data["start_conv_s"]), float(data["end_conv_s"]))


@dataclass(frozen=True)
class Speaker:
    """One side of a conversation: who, where the audio is, what was said and when."""

    channel: Channel
    participant_id: str
    audio: AudioRef
    words: tuple[Word, ...] = ()
    activity: tuple[Activity, ...] = ()

    @property
    def speech_s(self) -> float:
        """Total voice activity in seconds."""
        return sum(a.duration_s for a in self.activity)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "channel": self.channel.value,
            "participant_id": self.participant_id,
            "audio": self.audio.to_dict(),
            "words": [w.to_dict() for w in self.words],
            "activity": [a.to_dict() for a in self.activity],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Speaker:
        """Inverse of :meth:`to_dict`."""
        return cls(
            channel=Channel(data["channel"]),
            participant_id=str(data["participant_id"]),
            audio=AudioRef.from_dict(data["audio"]),
            words=tuple(Word.from_dict(w) for w in data["words"]),
            activity=tuple(Activity.from_dict(a) for a in data["activity"]),
        )


@dataclass(frozen=True)
class Conversation:
    """Two speakers recorded on separate channels that share one clock."""

    conversation_id: str
    source: SourceKind
    speakers: tuple[Speaker, Speaker]
    label: str | None = None
    """The source's subset (Seamless: ``naturalistic`` or ``improvised``)."""
    split: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    schema_version: int = CONVERSATION_SCHEMA_VERSION

    def __post_init__(self) -> None:
        channels = tuple(s.channel for s in self.speakers)
        if channels != (Channel.A, Channel.B):
            raise ValueError(f"{self.conversation_id}: speakers must be A then B, got {channels}")

    @property
    def duration_s(self) -> float:
        """The span both channels cover, in seconds (the shorter of the two recordings)."""
        return min(s.audio.duration_s for s in self.speakers)

    def speaker(self, channel: Channel) -> Speaker:
        """The speaker on ``channel``."""
        return self.speakers[0] if channel is Channel.A else self.speakers[1]

    def with_audio_paths(self, base_dir: Path, *, relative: bool) -> Conversation:
        """A copy whose audio paths are made relative to ``base_dir`` (or resolved against it).

        Paths under the working directory are stored relative to it, so a working directory can
        be moved and two builds in different folders give identical files.
        """

        def convert(path: str) -> str:
            p = Path(path)
            if relative:
                try:
                    return Path(p).resolve().relative_to(base_dir.resolve()).as_posix()
                except ValueError:
                    return str(p.resolve())
            return str(p if p.is_absolute() else base_dir / p)

        a, b = (replace(s, audio=s.audio.with_path(convert(s.audio.path))) for s in self.speakers)
        return replace(self, speakers=(a, b))

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form, with the schema version."""
        return {
            "schema_version": self.schema_version,
            "conversation_id": self.conversation_id,
            "source": self.source.value,
            "label": self.label,
            "split": self.split,
            "metadata": dict(sorted(self.metadata.items())),
            "speakers": [s.to_dict() for s in self.speakers],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Conversation:
        """Inverse of :meth:`to_dict`; refuses a schema version it does not know."""
        version = schema_version(data, CONVERSATION_SCHEMA_VERSION, "conversation")
        a, b = (Speaker.from_dict(s) for s in data["speakers"])
        return cls(
            conversation_id=str(data["conversation_id"]),
            source=SourceKind(data["source"]),
            speakers=(a, b),
            label=data.get("label"),
            split=data.get("split"),
            metadata={str(k): str(v) for k, v in data.get("metadata", {}).items()},
            schema_version=version,
        )
