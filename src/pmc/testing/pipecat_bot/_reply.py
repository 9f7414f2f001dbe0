"""The bot's canned reply: a fixed sentence in Piper's voice, as Twilio's 8 kHz PCM."""

from __future__ import annotations

import numpy as np

from pmc.audio import SAMPLE_RATE, resample, to_pcm16
from pmc.testing.hosted import answer_audio

RATE = 8_000
"""Twilio's rate, in and out."""
REPLY_TEXT = "Right, I see. Let me check that for you."


def reply_pcm(text: str = REPLY_TEXT) -> bytes:
    """``text`` as 8 kHz 16-bit PCM (Piper via :mod:`pmc.tts`, leading silence cut)."""
    wire = resample(answer_audio(text), SAMPLE_RATE, RATE)
    return np.ascontiguousarray(to_pcm16(wire)).tobytes()
