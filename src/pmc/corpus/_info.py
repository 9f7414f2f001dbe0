"""Corpus statistics for ``pmc corpus info``."""

from __future__ import annotations

from dataclasses import dataclass

from pmc.corpus._types import Channel, Conversation


@dataclass(frozen=True)
class ConversationStats:
    """One conversation's size."""

    conversation_id: str
    duration_s: float
    speech_s: dict[Channel, float]
    words: int


@dataclass(frozen=True)
class CorpusStats:
    """A corpus's size: conversations, audio, speech per speaker, words."""

    conversations: tuple[ConversationStats, ...]

    @property
    def audio_s(self) -> float:
        """Total audio, in seconds (each conversation counted once, not per channel)."""
        return sum(c.duration_s for c in self.conversations)

    def speech_s(self, channel: Channel) -> float:
        """Total voice activity of one side, in seconds."""
        return sum(c.speech_s[channel] for c in self.conversations)

    @property
    def words(self) -> int:
        """Total words of both speakers."""
        return sum(c.words for c in self.conversations)


def corpus_stats(conversations: list[Conversation]) -> CorpusStats:
    """Measure a corpus."""
    return CorpusStats(
        tuple(
            ConversationStats(
                c.conversation_id,
                c.duration_s,
                {s.channel: s.speech_s for s in c.speakers},
                sum(len(s.words) for s in c.speakers),
            )
            for c in conversations
        )
    )
