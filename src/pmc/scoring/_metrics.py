"""The metrics of one rollout, from its speech evidence (paper section 3.5).

See docs/architecture.md "Metrics".
Every time is on the stream clock. Pause points: silent, takeover or after, the takeover's
latency and whether speech was already under way; turn-end points: latency to the first word,
duration and word count against the person's reply, censoring at the cap; recall points: the
transcript that the matchers and judges read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from pmc.scoring._evidence import Evidence, TalkStretch, talk_stretches
from pmc.scoring._talkover import YieldScore


class PauseOutcome(StrEnum):
    """What a system did at a pause (paper section 3.5)."""

    SILENT = "silent"
    """No words inside the pause and none after it."""
    TAKEOVER = "takeover"
    """Words inside the labelled pause: it took the floor."""
    AFTER = "after"
    """No words inside the pause, but words after the person had resumed."""


@dataclass(frozen=True)
class PauseScore:
    """A pause point's metrics.

    Attributes:
        outcome: Silent, takeover or after.
        latency_s: Takeover latency: first word onset minus the pause start, 0 when speech was
            already under way at the pause start; None unless a takeover.
        under_way: The taking-over speech had begun before the pause.
        spoke_before: Words that began and ended before the pause (the system spoke over the
            turn earlier), flagged apart from the outcome.
        wordless: Above-gate audio without words inside the pause (wordless phonation).
        after_latency_s: For ``after``: first word onset minus the pause end.
        resumption: For a takeover still under way when the person resumed (their resumption
            talks over it): whether it yielded, and how soon.
    """

    outcome: PauseOutcome
    latency_s: float | None
    under_way: bool
    spoke_before: bool
    wordless: bool
    after_latency_s: float | None = None
    resumption: YieldScore | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        resumption = None if self.resumption is None else self.resumption.to_dict()
        return {**asdict(self), "outcome": self.outcome.value, "resumption": resumption}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PauseScore:
        """Inverse of :meth:`to_dict`."""
        resumption = data.get("resumption")
        return cls(
            **{
                **data,
                "outcome": PauseOutcome(data["outcome"]),
                "resumption": None if resumption is None else YieldScore.from_dict(resumption),
            }
        )


def pause_score(found: Sequence[Evidence], start_s: float, end_s: float) -> PauseScore:
    """Score a pause labelled from ``start_s`` to ``end_s`` on the stream clock.

    A takeover is a word-bearing interval inside the pause; its latency is measured from the
    onset of the run of talk it belongs to, so talk that ran into the pause is under way.
    """
    talk = talk_stretches(found)
    inside = [r for r in talk if r.overlaps(start_s, end_s)]
    wordless = any(not e.word_bearing and e.overlaps(start_s, end_s) for e in found)
    before = any(r.end_stream_s <= start_s for r in talk)
    if inside:
        onset = inside[0].onset_stream_s
        under_way = onset < start_s
        latency = 0.0 if under_way else onset - start_s
        return PauseScore(PauseOutcome.TAKEOVER, round(latency, 4), under_way, before, wordless)
    later = [r for r in talk if r.end_stream_s > end_s]
    if later:
        after = round(later[0].onset_stream_s - end_s, 4)
        return PauseScore(PauseOutcome.AFTER, None, False, before, wordless, after)
    return PauseScore(PauseOutcome.SILENT, None, False, before, wordless)


@dataclass(frozen=True)
class ReplyScore:
    """A turn-end point's metrics against the person's reply.

    Attributes:
        latency_s: First word onset minus the turn end (zero or negative when the reply began
            before it); None without words.
        duration_s: First to last word-bearing interval of the reply; None without words.
        words: Words in the reply.
        human_duration_s: The person's reply, from the labels.
        human_words: Words the person said.
        duration_ratio: ``duration_s / human_duration_s``.
        word_ratio: ``words / human_words``.
        censored: Still speaking when the rollout reached its cap, on the played track.
        transcript: The reply's words.
        token_f1: Token F1 against the person's words (None until computed).
        cosine: Embedding cosine against the person's words (None until computed).
    """

    latency_s: float | None
    duration_s: float | None
    words: int
    human_duration_s: float | None
    human_words: int
    duration_ratio: float | None
    word_ratio: float | None
    censored: bool
    transcript: str
    token_f1: float | None = None
    cosine: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReplyScore:
        """Inverse of :meth:`to_dict`."""
        return cls(**data)


def reply_stretches(found: Sequence[Evidence], boundary_s: float) -> list[TalkStretch]:
    """The stretches of talk that make the reply: those still going at the turn end, or later."""
    return [r for r in talk_stretches(found) if r.end_stream_s > boundary_s]


def reply_score(
    found: Sequence[Evidence],
    boundary_s: float,
    human_duration_s: float | None,
    human_words: int,
    censored: bool,
) -> ReplyScore:
    """Score the reply to a turn that ended at ``boundary_s`` on the stream clock."""
    reply = reply_stretches(found, boundary_s)
    said = [w for r in reply for w in r.words]
    transcript = " ".join(w.text for w in said)
    if not reply:
        return ReplyScore(None, None, 0, human_duration_s, human_words, None, None, censored, "")
    onset = reply[0].onset_stream_s
    duration = reply[-1].end_stream_s - onset
    duration_ratio = duration / human_duration_s if human_duration_s else None
    word_ratio = len(said) / human_words if human_words else None
    return ReplyScore(
        latency_s=round(onset - boundary_s, 4),
        duration_s=round(duration, 4),
        words=len(said),
        human_duration_s=human_duration_s,
        human_words=human_words,
        duration_ratio=None if duration_ratio is None else round(duration_ratio, 4),
        word_ratio=None if word_ratio is None else round(word_ratio, 4),
        censored=censored,
        transcript=transcript,
    )


def censored_at(found: Sequence[Evidence], cap_stream_s: float, silence_s: float) -> bool:
    """Whether the reply was still under way at the cap, on the played track.

    By the protocol's own stop rule a reply is over once its words have been followed by
    ``silence_s`` of silence (2 s); words that ended less than that before the cap (a pause
    between two sentences) mean it was not over. Murmur without words does not count.
    """
    return any(r.end_stream_s > cap_stream_s - silence_s for r in talk_stretches(found))
