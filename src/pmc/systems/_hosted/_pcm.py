"""Audio on the hosted wire: PCM16 little-endian mono, base64 inside JSON messages.

OpenAI Realtime and xAI take and give 24 kHz; Gemini Live takes any rate (16 kHz natively) and
gives 24 kHz (docs/wire-formats.md section 6). Output deltas may split a sample across
two messages, so the decoder carries a lone byte over.
"""

from __future__ import annotations

import base64
import binascii

import numpy as np
import soxr

from pmc.audio import FloatArray, to_pcm16


def encode(samples: FloatArray) -> str:
    """Float samples as base64 PCM16 little-endian."""
    return base64.b64encode(to_pcm16(samples).astype("<i2", copy=False).tobytes()).decode("ascii")


class DeltaDecoder:
    """Base64 PCM16 deltas to float32 samples, carrying a split sample to the next delta."""

    def __init__(self) -> None:
        self._carry = b""

    def decode(self, data: str) -> FloatArray:
        """The whole samples ``data`` completes; raises ValueError on bad base64."""
        try:
            raw = base64.b64decode(data, validate=True)
        except binascii.Error as exc:
            raise ValueError(f"audio is not base64 ({exc})") from None
        joined = self._carry + raw
        whole = len(joined) - len(joined) % 2
        self._carry = joined[whole:]
        pcm = np.frombuffer(joined, dtype="<i2", count=whole // 2)
        return pcm.astype(np.float32) / 32768.0

    def reset(self) -> None:
        """Forget a split sample (a new response starts on a sample boundary)."""
        self._carry = b""


class InputResampler:
    """Streams live frames from the harness's rate to the wire's, chunk by chunk.

    The same soxr quality as :func:`pmc.audio.resample` (HQ), so the stream equals the whole
    file resampled; a no-op when the rates agree. Its filter holds back about 16 ms and releases
    output in bursts (24 to 16 kHz: 0 or about 490 samples per 20 ms frame), which is why hosted
    cards send at the harness's own 24 kHz unless they ask otherwise.
    """

    def __init__(self, rate_in: int, rate_out: int) -> None:
        self._stream = (
            None
            if rate_in == rate_out
            else soxr.ResampleStream(rate_in, rate_out, 1, dtype="float32", quality="HQ")
        )

    def push(self, samples: FloatArray) -> FloatArray:
        """The resampled chunk (soxr holds back a few samples of delay until later chunks)."""
        if self._stream is None:
            return samples
        return np.asarray(self._stream.resample_chunk(samples), dtype=np.float32)
