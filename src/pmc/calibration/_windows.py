"""What Whisper made of one window of a track, and what that window says about its instants."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pmc.asr import TimedWord
from pmc.calibration._settings import LabelSettings


class WindowVerdict(StrEnum):
    """What one window says about the instants it covers."""

    SPEECH = "speech"
    """Words that passed every check: their spans are speech, the rest of the window silence."""
    NO_SPEECH = "no_speech"
    """No words, or Whisper's no-speech head fired: the whole window is silence."""
    UNSURE = "unsure"
    """Words with a low log-probability or a repetitive text: the window vouches for nothing."""


@dataclass(frozen=True)
class WindowSegment:
    """One decoded segment of a window, with Whisper's scores; word times on the track clock.

    Attributes:
        no_speech_prob: Whisper's no-speech probability for the decode.
        avg_logprob: Mean token log-probability of the decode.
        compression_ratio: gzip compression ratio of the decoded text (high when repetitive).
        words: The words, times in seconds from the start of the track.
    """

    no_speech_prob: float
    avg_logprob: float
    compression_ratio: float
    words: tuple[TimedWord, ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form; a word is ``[text, start_s, end_s, probability]``."""
        return {
            "no_speech_prob": round(self.no_speech_prob, 6),
            "avg_logprob": round(self.avg_logprob, 6),
            "compression_ratio": round(self.compression_ratio, 6),
            "words": [
                [w.text, round(w.start_s, 3), round(w.end_s, 3), round(w.probability, 4)]
                for w in self.words
            ],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WindowSegment:
        """Inverse of :meth:`to_dict`."""
        return cls(
            float(data["no_speech_prob"]),
            float(data["avg_logprob"]),
            float(data["compression_ratio"]),
            tuple(TimedWord(str(t), float(s), float(e), float(p)) for t, s, e, p in data["words"]),
        )


@dataclass(frozen=True)
class WindowDecode:
    """What Whisper made of one window of a track.

    Attributes:
        start_s: Window start, seconds from the start of the track.
        end_s: Window end (exclusive); the last window stops with the track.
        peak: The window's peak before normalising; 0 is digital silence, never decoded.
        segments: The decoded segments.
    """

    start_s: float
    end_s: float
    peak: float
    segments: tuple[WindowSegment, ...] = ()

    def verdict(self, settings: LabelSettings) -> WindowVerdict:
        """Whether the window's words count, by the checks in ``settings``."""
        voiced = [s for s in self.segments if any(_lexical(w) for w in s.words)]
        if not voiced:
            return WindowVerdict.NO_SPEECH
        if all(s.no_speech_prob > settings.no_speech_threshold for s in voiced):
            return WindowVerdict.NO_SPEECH
        passed = all(
            s.no_speech_prob <= settings.no_speech_threshold
            and s.avg_logprob >= settings.log_prob_threshold
            and s.compression_ratio <= settings.compression_ratio_threshold
            for s in voiced
        )
        return WindowVerdict.SPEECH if passed else WindowVerdict.UNSURE

    def words(self) -> list[TimedWord]:
        """The window's lexical words (punctuation-only tokens dropped), in order."""
        return [w for s in self.segments for w in s.words if _lexical(w)]

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "start_s": round(self.start_s, 6),
            "end_s": round(self.end_s, 6),
            "peak": round(self.peak, 6),
            "segments": [s.to_dict() for s in self.segments],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WindowDecode:
        """Inverse of :meth:`to_dict`."""
        return cls(
            float(data["start_s"]),
            float(data["end_s"]),
            float(data["peak"]),
            tuple(WindowSegment.from_dict(s) for s in data["segments"]),
        )


def _lexical(word: TimedWord) -> bool:
    return any(ch.isalnum() for ch in word.text)
