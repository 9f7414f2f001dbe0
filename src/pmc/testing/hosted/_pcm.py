"""PCM16 on the fakes' wire: the answers' rate and decoding the client's base64 audio."""

from __future__ import annotations

import base64
import binascii

import numpy as np

from pmc.audio import FloatArray

OUTPUT_RATE = 24_000
"""Answers are 24 kHz PCM16 in every dialect (docs/wire-formats.md section 6)."""


def decode_pcm16(data: str) -> FloatArray | None:
    """Base64 PCM16 little-endian as float32; None if it is not valid base64 of whole samples."""
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    if len(raw) % 2:
        return None
    return np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0
