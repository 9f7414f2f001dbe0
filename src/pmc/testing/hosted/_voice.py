"""The fake servers' spoken answer: real words in the bundled voice, cut into odd-sized deltas."""

from __future__ import annotations

import base64
import functools

import numpy as np

from pmc.audio import SAMPLE_RATE, FloatArray, to_pcm16
from pmc.testing.speech import spoken

SHARP_RMS = 0.05
"""Five times the speech gate's opening RMS (0.01, docs/architecture.md "Metrics"): the level each
of the answer's first milliseconds reaches."""
SHARP_MS = 5
"""The answer starts where each of its next 5 ms holds speech at :data:`SHARP_RMS` (RMS per
millisecond), so its speech begins sharply at its first sample: scoring's envelope onset lands
on it or the sample after (both answers the tests use, after digital silence), and a known start
is a known onset. The voice's softer lead-in before that (about 30 ms of "R") is cut."""
TAIL_LEVEL = 0.02
"""The answer ends at its last sample this loud (twice the gate's opening level)."""


@functools.cache
def answer_audio(text: str) -> FloatArray:
    """``text`` in the bundled voice at 24 kHz, starting sharply, trailing silence cut (cached)."""
    audio = spoken(text)
    start = sharp_start(audio, SAMPLE_RATE)
    loud = np.flatnonzero(np.abs(audio) >= TAIL_LEVEL)
    if start is None or not loud.size:
        return audio
    return np.ascontiguousarray(audio[start : loud[-1] + 1])


def sharp_start(audio: FloatArray, rate: int) -> int | None:
    """The first sample from which each of the next :data:`SHARP_MS` milliseconds is loud.

    Loud: its RMS reaches :data:`SHARP_RMS`. None when the audio has no such stretch.
    """
    ms = rate // 1000
    power = np.concatenate([[0.0], np.cumsum(audio.astype(np.float64) ** 2)])
    if len(audio) < SHARP_MS * ms:
        return None
    loud = (power[ms:] - power[:-ms]) / ms >= SHARP_RMS**2  # loud[n]: the ms from sample n
    span = len(loud) - (SHARP_MS - 1) * ms
    sharp = np.ones(span, dtype=bool)
    for k in range(SHARP_MS):
        sharp &= loud[k * ms : k * ms + span]
    found = np.flatnonzero(sharp)
    return int(found[0]) if found.size else None


def pcm_deltas(audio: FloatArray, sizes: tuple[int, ...]) -> list[bytes]:
    """``audio`` as PCM16 bytes in deltas of ``sizes`` bytes, cycled (odd sizes split samples)."""
    data = to_pcm16(audio).astype("<i2").tobytes()
    deltas: list[bytes] = []
    at = 0
    while at < len(data):
        size = sizes[len(deltas) % len(sizes)]
        deltas.append(data[at : at + size])
        at += size
    return deltas


def b64(data: bytes) -> str:
    """Bytes as base64 text."""
    return base64.b64encode(data).decode("ascii")
