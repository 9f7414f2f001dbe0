"""Audio and text cuts of a point, at 24 kHz, each a whole number of 80 ms frames.

Frames of 1920 samples are what full-duplex models step on (12.5 Hz at 24 kHz); hosted systems
take 20 ms frames, which divide them. History is cut back from the stream start, so it ends
exactly where the live stream begins and never holds audio from after the point.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pmc import io
from pmc.audio import SAMPLE_RATE, FloatArray, wav_bytes
from pmc.corpus import Channel
from pmc.labels import Label

FRAME = 1920
"""Samples per 80 ms frame at 24 kHz (Moshi's 12.5 Hz; docs/wire-formats.md section 5)."""
HISTORY_CAP_S = 163.84
"""History before the active turn is capped at 2048 frames of 80 ms (docs/architecture.md
"Protocol")."""


def to_sample(t_conv_s: float) -> int:
    """The sample at a conversation time."""
    return round(t_conv_s * SAMPLE_RATE)


def history_start(turns: Sequence[Label], stream_start_s: float) -> float:
    """The earliest turn start within the cap before the stream start.

    The cap is docs/architecture.md "Protocol"'s.
    """
    earliest = stream_start_s - HISTORY_CAP_S
    starts = [t.start_conv_s for t in turns if earliest <= t.start_conv_s < stream_start_s]
    return min(starts, default=stream_start_s)


def history_range(start_s: float, stream_start: int) -> tuple[int, int]:
    """Sample range of the history, in whole frames, ending at the stream start.

    It reaches back to ``start_s`` rounded out to a frame (negative where that falls before the
    recording: the cut is then padded with silence).
    """
    frames = -(-(stream_start - to_sample(start_s)) // FRAME)
    return stream_start - frames * FRAME, stream_start


def cut(track: FloatArray, first: int, last: int) -> FloatArray:
    """Samples ``first`` to ``last`` of a track, then silence up to a whole number of frames.

    Where the range lies outside the track (before its start) the cut holds silence too.
    """
    length = last - first
    length += -length % FRAME
    out = np.zeros(length, dtype=np.float32)
    lo, hi = max(first, 0), min(last, len(track))
    if hi > lo:
        out[lo - first : hi - first] = track[lo:hi]
    return out


def write_wav(folder: Path, name: str, audio: FloatArray) -> str:
    """Write one cut as PCM16 WAV; returns its file name."""
    io.write_bytes(folder / name, wav_bytes(audio, SAMPLE_RATE))
    return name


def history_messages(
    turns: Sequence[Label], start_s: float, end_s: float, system: Channel
) -> list[dict[str, Any]]:
    """Completed turns inside the history as chat messages (what hosted systems accept)."""
    return [
        {
            "role": "assistant" if t.speaker is system else "user",
            "text": t.text,
            "start_conv_s": t.start_conv_s,
            "end_conv_s": t.end_conv_s,
        }
        for t in turns
        if t.start_conv_s >= start_s and t.end_conv_s <= end_s and t.text
    ]
