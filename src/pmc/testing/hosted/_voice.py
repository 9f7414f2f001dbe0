"""The fake servers' spoken answer: real words in the bundled voice, cut into odd-sized deltas."""

from __future__ import annotations

import base64
import functools

import numpy as np

from pmc.audio import FloatArray, to_pcm16
from pmc.tts import VoiceHint, create_tts

ONSET_LEVEL = 0.02
"""The answer starts at its first sample this loud: the voice's leading silence is cut, so the
first sample the fake sends is where scoring's speech gate (0.01 RMS) opens."""


@functools.cache
def answer_audio(text: str) -> FloatArray:
    """``text`` in the bundled voice at 24 kHz, leading and trailing silence cut (cached)."""
    audio = create_tts().speak(text, VoiceHint())
    loud = np.flatnonzero(np.abs(audio) >= ONSET_LEVEL)
    if not loud.size:
        return audio
    return np.ascontiguousarray(audio[loud[0] : loud[-1] + 1])


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
