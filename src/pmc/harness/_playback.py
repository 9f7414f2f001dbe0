"""Playback reconstruction: the system's output placed on the stream clock as a client plays it.

Each audio chunk starts at the later of its arrival and the end of the chunk before it; an
interruption drops whatever had not been played yet. The result is one track aligned to the
stream clock, silences kept (docs/architecture.md "Clocks"); all scoring reads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pmc.audio import SAMPLE_RATE, FloatArray
from pmc.clock import NS_PER_S


@dataclass(frozen=True)
class Chunk:
    """Output audio as it arrived: receipt time on the harness clock, and its samples."""

    arrival_ns: int
    samples: FloatArray


@dataclass(frozen=True)
class Played:
    """The played track and what reconstruction measured."""

    track: FloatArray
    """Mono float32 at 24 kHz; sample 0 is the stream clock's origin."""
    dropped_samples: int
    """Samples that an interruption kept from being played."""
    backlog_max_ms: float
    """The longest a chunk waited between arrival and playback."""


def reconstruct(
    chunks: Sequence[Chunk],
    t0_ns: int,
    interruptions_ns: Sequence[int] = (),
    length_s: float | None = None,
    sample_rate: int = SAMPLE_RATE,
) -> Played:
    """Place ``chunks`` on the stream clock that starts at ``t0_ns``.

    Args:
        chunks: Output audio in arrival order.
        t0_ns: The stream clock's origin on the harness clock.
        interruptions_ns: Instants at which a client would stop playback and drop its queue.
        length_s: Length of the track (at least to the end of the last played sample).
        sample_rate: Rate of the chunks.
    """
    placed: list[tuple[int, FloatArray]] = []
    cursor = 0  # where the next chunk can start playing, in samples from t0
    backlog = 0
    pending = sorted(interruptions_ns)

    def sample(ns: int) -> int:
        return round((ns - t0_ns) * sample_rate / NS_PER_S)

    dropped = 0

    def interrupt(at: int) -> None:
        """Stop playback at ``at``: cut what plays then, drop what was queued behind it."""
        nonlocal cursor, dropped
        for i, (start, samples) in enumerate(placed):
            if start + len(samples) > at:
                keep = max(0, at - start)
                dropped += len(samples) - keep
                placed[i] = (start, samples[:keep])
        cursor = min(cursor, at)

    for chunk in chunks:
        arrival = sample(chunk.arrival_ns)
        # Compared on the clock, not in samples: a chunk that arrived a few microseconds before
        # an interruption rounds to the same sample, and is still cut by it.
        while pending and pending[0] < chunk.arrival_ns:
            interrupt(sample(pending.pop(0)))
        start = max(arrival, cursor)
        backlog = max(backlog, start - arrival)
        placed.append((start, chunk.samples))
        cursor = start + len(chunk.samples)
    for at_ns in pending:
        interrupt(sample(at_ns))
    total = max((s + len(a) for s, a in placed), default=0)
    if length_s is not None:
        total = max(total, round(length_s * sample_rate))
    track = np.zeros(total, dtype=np.float32)
    for start, samples in placed:
        if len(samples):
            lo = max(start, 0)
            track[lo : start + len(samples)] += samples[lo - start :]
    return Played(track, dropped, round(backlog * 1000 / sample_rate, 3))
