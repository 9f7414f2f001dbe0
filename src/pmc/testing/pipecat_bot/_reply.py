"""The bot's canned reply: a fixed sentence in Piper's voice, as PCM16 at the wire's rate."""

from __future__ import annotations

import numpy as np

from pmc.audio import SAMPLE_RATE, resample, to_pcm16
from pmc.testing.hosted import answer_audio

RATE = 8_000
"""Twilio's rate, in and out."""
PROTOBUF_RATE = 16_000
"""The protobuf route's rate, in and out (what Pipecat bots usually take)."""
REPLY_TEXT = "Right, I see. Let me check that for you."


def reply_pcm(text: str = REPLY_TEXT, rate: int = RATE) -> bytes:
    """``text`` as 16-bit PCM at ``rate`` (Piper via :mod:`pmc.tts`, leading silence cut)."""
    wire = resample(answer_audio(text), SAMPLE_RATE, rate)
    return np.ascontiguousarray(to_pcm16(wire)).tobytes()
