"""The wire format shared by the duplex server and pmc's adapters (plain Python, no PyTorch).

Every websocket message is binary: one kind byte, then the payload. The stock Moshi protocol
(``moshi/server.py``; docs/wire-formats.md section 5) uses 0x00-0x02 both ways; the
preload route adds kinds of its own from 0x10 up, clear of the stock ones (0x03-0x06 are the
stock web client's control, metadata, error and ping).
"""

from __future__ import annotations

from enum import IntEnum

INSTALL_HINT = (
    "the duplex server needs PyTorch and moshi in their own environment: run `make duplex-env`, "
    "then `pmc serve-duplex` uses .venv-duplex (README, 'Full-duplex systems')"
)

SAMPLE_RATE = 24_000
"""Mimi's rate (``moshi/models/loaders.py`` SAMPLE_RATE)."""
FRAME_RATE_HZ = 12.5
"""Mimi's frame rate (loaders.FRAME_RATE): one model step per 80 ms."""
FRAME_SAMPLES = 1920
"""Samples in one model frame: 24000 / 12.5."""
DEFAULT_SEED = 42424242
"""The seed of sessions that bring none: the stock server's own (``seed_all`` in moshi's
``server.py``)."""
HISTORY_CHUNK_BYTES = 1 << 20
"""History PCM16 travels in messages of at most 1 MiB (aiohttp's default cap is 4 MiB)."""


class Kind(IntEnum):
    """The first byte of every message."""

    HANDSHAKE = 0x00
    """Server -> client: the session is live; the stream clock starts here."""
    AUDIO = 0x01
    """Both ways: Ogg-Opus pages at 24 kHz (sphn)."""
    TEXT = 0x02
    """Server -> client: one UTF-8 text piece, SentencePiece's ``▁`` turned into a space."""
    ERROR = 0x05
    """Server -> client: a UTF-8 reason; the server closes after it."""
    PRELOAD = 0x10
    """Client -> server (preload route): the JSON header of the history."""
    USER_HISTORY = 0x11
    """Client -> server: a chunk of the other speaker's history, PCM16 mono little-endian."""
    SYSTEM_HISTORY = 0x12
    """Client -> server: a chunk of the system's own history audio, PCM16."""
    COMMIT = 0x13
    """Client -> server: the history is complete; force it."""
    PRIMED = 0x14
    """Server -> client: JSON of what was forced; the handshake follows."""
