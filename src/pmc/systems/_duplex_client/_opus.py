"""Ogg-Opus at 24 kHz through sphn, the codec the Moshi protocol uses both ways.

sphn is an optional extra (``pip install 'pmc[duplex-client]'``): it is imported here, when a
duplex adapter is first used, and its absence is reported as an install hint, not a traceback.
sphn 0.2 is the API used (``append_pcm`` returns bytes, ``append_bytes`` returns PCM); 0.1 named
them ``read_bytes``/``read_pcm`` (docs/wire-formats.md section 5).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pmc.audio import FloatArray
from pmc.errors import PmcError

INSTALL_HINT = "the duplex adapters need sphn: pip install 'pmc[duplex-client]'"


def _sphn() -> Any:
    try:
        import sphn
    except ImportError:
        raise PmcError(INSTALL_HINT) from None
    return sphn


def require() -> None:
    """Fail now, with the install hint, if sphn is missing."""
    _sphn()


class OpusEncoder:
    """PCM frames in, Ogg-Opus pages out (one stream per session)."""

    def __init__(self, sample_rate: int) -> None:
        self._writer = _sphn().OpusStreamWriter(sample_rate)

    def encode(self, samples: FloatArray) -> bytes:
        """The Ogg pages that ``samples`` completes (may be empty while the encoder buffers)."""
        return bytes(self._writer.append_pcm(np.ascontiguousarray(samples, dtype=np.float32)))


class OpusDecoder:
    """Ogg-Opus pages in, PCM out (one stream per session)."""

    def __init__(self, sample_rate: int) -> None:
        self._reader = _sphn().OpusStreamReader(sample_rate)

    def decode(self, payload: bytes) -> FloatArray:
        """The PCM that ``payload`` completes, mono float32 (may be empty)."""
        pcm = self._reader.append_bytes(payload)
        return np.asarray(pcm, dtype=np.float32).reshape(-1)
