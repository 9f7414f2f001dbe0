"""Speech evidence on the played track: gate intervals, the words in them, wordless phonation.

docs/architecture.md "Metrics": a gate interval is word-bearing when a transcribed word overlaps it;
above-gate audio without words is wordless phonation. Onsets come from the gate (refined from its 20
ms window to the speech's first sample, :class:`pmc.gate.OnsetRule`), not from Whisper's word times,
which err by 50 to 250 ms; only where an interval began well before its first word (murmur running
into speech) does the word's own start decide.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pmc.asr import TimedWord
from pmc.gate import Interval

MURMUR_LEAD_S = 0.5
"""An interval whose first word starts more than this after it opened began as murmur: its
words' onset is the first word's start. Half a second is twice Whisper's usual boundary error
(docs/dependencies.md section 1: 50 to 250 ms)."""


STRETCH_GAP_S = 0.25
"""Word-bearing intervals this close belong to one run of speech: the paper's section 3.2 closes
gaps of at most 250 ms inside one speaker's activity. The gate itself splits at every gap longer
than its 40 ms bridge, which falls between words."""


@dataclass(frozen=True)
class Evidence:
    """One gate interval on the stream clock and the words that overlap it.

    Attributes:
        start_stream_s: Where the gate opened.
        end_stream_s: Where it closed.
        words: The words it owns: each word belongs to the one interval it overlaps most (or,
            falling in a gap of the gate, the nearest one within :data:`STRETCH_GAP_S`), so every
            word is counted once.
        onset_stream_s: Where its words begin: the gate's opening, or the first overlapping
            word's start when the interval began as murmur; None when no word overlaps it.
    """

    start_stream_s: float
    end_stream_s: float
    words: tuple[TimedWord, ...]
    onset_stream_s: float | None

    @property
    def word_bearing(self) -> bool:
        """Whether a transcribed word overlaps it (else it is wordless phonation)."""
        return self.onset_stream_s is not None

    def overlaps(self, start_s: float, end_s: float) -> bool:
        """Whether it overlaps ``[start_s, end_s)``."""
        return self.start_stream_s < end_s and self.end_stream_s > start_s

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (words as ``[text, start, end, probability]``)."""
        return {
            "start_stream_s": round(self.start_stream_s, 4),
            "end_stream_s": round(self.end_stream_s, 4),
            "onset_stream_s": None
            if self.onset_stream_s is None
            else round(self.onset_stream_s, 4),
            "words": [
                [w.text, round(w.start_s, 3), round(w.end_s, 3), round(w.probability, 3)]
                for w in self.words
            ],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Evidence:
        """Inverse of :meth:`to_dict`."""
        onset = data.get("onset_stream_s")
        return cls(
            float(data["start_stream_s"]),
            float(data["end_stream_s"]),
            tuple(TimedWord(str(t), float(a), float(b), float(p)) for t, a, b, p in data["words"]),
            None if onset is None else float(onset),
        )


def _overlap(word: TimedWord, interval: Interval) -> float:
    return min(word.end_s, interval.end_s) - max(word.start_s, interval.start_s)


def evidence(intervals: Sequence[Interval], words: Sequence[TimedWord]) -> list[Evidence]:
    """Join gate intervals and words (both on the stream clock)."""
    owned: list[list[TimedWord]] = [[] for _ in intervals]
    for word in words:
        # The interval it overlaps most; a short word that fell in a gap of the gate goes to the
        # nearest interval within a run's gap, so the transcript of a run keeps it.
        overlaps = [_overlap(word, interval) for interval in intervals]
        if overlaps and max(overlaps) > -STRETCH_GAP_S:
            owned[overlaps.index(max(overlaps))].append(word)
    out = []
    for interval, mine in zip(intervals, owned, strict=True):
        touching = [w.start_s for w in words if _overlap(w, interval) > 0]
        onset = None
        if touching:
            first = min(touching)
            onset = first if first - interval.start_s > MURMUR_LEAD_S else interval.start_s
        out.append(Evidence(interval.start_s, interval.end_s, tuple(mine), onset))
    return out


@dataclass(frozen=True)
class TalkStretch:
    """One stretch of talk: word-bearing intervals with gaps of at most :data:`STRETCH_GAP_S`.

    The onset of speech already under way at a boundary is where its run began.
    """

    parts: tuple[Evidence, ...]

    @property
    def onset_stream_s(self) -> float:
        """Where its words begin."""
        onset = self.parts[0].onset_stream_s
        return self.parts[0].start_stream_s if onset is None else onset

    @property
    def end_stream_s(self) -> float:
        """Where its last interval closes."""
        return self.parts[-1].end_stream_s

    @property
    def words(self) -> tuple[TimedWord, ...]:
        """Its words, in order."""
        return tuple(w for e in self.parts for w in e.words)

    def overlaps(self, start_s: float, end_s: float) -> bool:
        """Whether one of its intervals overlaps ``[start_s, end_s)``."""
        return any(e.overlaps(start_s, end_s) for e in self.parts)


def talk_stretches(
    found: Sequence[Evidence], gap_s: float = STRETCH_GAP_S, words_only: bool = True
) -> list[TalkStretch]:
    """The word-bearing intervals (``words_only=False``: all) grouped into stretches of talk."""
    groups: list[list[Evidence]] = []
    for e in (e for e in found if e.word_bearing or not words_only):
        if groups and e.start_stream_s - groups[-1][-1].end_stream_s <= gap_s:
            groups[-1].append(e)
        else:
            groups.append([e])
    return [TalkStretch(tuple(g)) for g in groups]


def ungated(words: Sequence[TimedWord], found: Sequence[Evidence]) -> list[TimedWord]:
    """Words that overlap no gate interval (Whisper hearing words in near-silence)."""
    kept = {id(w) for e in found for w in e.words}  # every overlapping word has an owner
    return [w for w in words if id(w) not in kept]
