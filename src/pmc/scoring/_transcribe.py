"""Words for the played track: each stretch of gated speech recognised as a clip of its own.

docs/architecture.md "Metrics". Whisper over a whole played track (30 s and more, mostly
silence) can return nothing for a short reply, above all one the system has already said in
that rollout: its no-speech and log-probability checks judge a 30 s window, where a second of
speech among silence, or a phrase repeated from earlier in the window, looks like noise or a
loop. Recognising only where the gate heard speech, each stretch with a margin of silence, gives
every reply a window of its own. Word times are put back on the stream clock by the clip's
start, exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from pmc.asr import TimedWord, Transcriber
from pmc.audio import SAMPLE_RATE, FloatArray
from pmc.gate import Interval


class Transcription(StrEnum):
    """What the recogniser is given of the played track."""

    GATED = "gated"
    """Each stretch of gated speech, with a margin, as a clip of its own (the default)."""
    TRACK = "track"
    """The whole track in one pass, as scores were made before this setting existed."""


CLIP_MARGIN_S = 0.5
"""Silence kept each side of a stretch: Whisper places a word's edges with some lead-in and
tail, and half a second is twice its usual boundary error (docs/dependencies.md section 1)."""
CLIP_JOIN_S = 1.0
"""Gate intervals closer than this share a clip, so a sentence the gate splits between words
(at every gap longer than its 40 ms bridge) is recognised whole, with its context."""


@dataclass(frozen=True)
class Clip:
    """A stretch of the track given to the recogniser, on the stream clock (sample-exact)."""

    start_sample: int
    end_sample: int

    @property
    def start_s(self) -> float:
        """Where the clip starts on the stream clock: its words are shifted by this."""
        return self.start_sample / SAMPLE_RATE


def clips(intervals: Sequence[Interval], samples: int) -> list[Clip]:
    """The clips that cover ``intervals`` on a track of ``samples`` samples."""
    spans: list[list[float]] = []
    for interval in sorted(intervals, key=lambda i: i.start_s):
        if spans and interval.start_s - spans[-1][1] < CLIP_JOIN_S:
            spans[-1][1] = max(spans[-1][1], interval.end_s)
        else:
            spans.append([interval.start_s, interval.end_s])
    out = []
    for start_s, end_s in spans:
        start = max(0, round((start_s - CLIP_MARGIN_S) * SAMPLE_RATE))
        end = min(samples, round((end_s + CLIP_MARGIN_S) * SAMPLE_RATE))
        if end > start:
            out.append(Clip(start, end))
    return out


def transcribe_track(
    track: FloatArray,
    intervals: Sequence[Interval],
    transcriber: Transcriber,
    mode: Transcription = Transcription.GATED,
) -> list[TimedWord]:
    """The words of ``track`` (times on the stream clock); none where the gate heard nothing."""
    if not intervals:
        return []
    if mode is Transcription.TRACK:
        return transcriber.transcribe(track)
    words = []
    for clip in clips(intervals, len(track)):
        shift = clip.start_s
        for w in transcriber.transcribe(track[clip.start_sample : clip.end_sample]):
            words.append(TimedWord(w.text, w.start_s + shift, w.end_s + shift, w.probability))
    return words
