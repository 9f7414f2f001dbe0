"""Rollouts at once against a duplex card, on synthetic pause points, in real time."""

from __future__ import annotations

import asyncio

import numpy as np

from pmc.audio import FloatArray
from pmc.clock import RealClock
from pmc.corpus import Channel
from pmc.duplex_server import SAMPLE_RATE
from pmc.harness import ProtocolParams, RolloutJob, RolloutResult, run_rollout
from pmc.points import Point, PointKind
from pmc.systems import HistoryWord, Preload, SystemCard, create_adapter


def pause_point(live_s: float, history_s: float = 0.0) -> Point:
    """A synthetic pause point: the pause at a third of the live stream, 0.4 s long."""
    stream_start = 10.0 + history_s
    pause = live_s / 3
    return Point(
        point_id="pause-synthetic",
        kind=PointKind.PAUSE,
        conversation_id="synthetic",
        user=Channel.A,
        system=Channel.B,
        history_start_conv_s=10.0,
        stream_start_conv_s=stream_start,
        boundary_conv_s=stream_start + pause,
        boundary_stream_s=pause,
        boundary_end_conv_s=stream_start + pause + 0.4,
        boundary_end_stream_s=pause + 0.4,
        stream_end_conv_s=stream_start + live_s,
    )


def _speechlike(seconds: float, seed: int) -> FloatArray:
    """Seeded noise with a syllable-rate envelope (4 Hz), about 0.1 RMS."""
    rng = np.random.default_rng(seed)
    n = round(seconds * SAMPLE_RATE)
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * 4 * np.arange(n) / SAMPLE_RATE)
    return (rng.standard_normal(n) * 0.14 * envelope).astype(np.float32)


async def drive_rollouts(
    card: SystemCard, sessions: int, live_s: float, history_s: float
) -> list[RolloutResult]:
    """``sessions`` rollouts at once against ``card``, a synthetic pause point each, real time.

    The history is ``history_s`` of speech-like noise on both sides with one system word a
    second, so a preloading server has something to force.
    """
    clock = RealClock()
    point = pause_point(live_s, history_s)
    words = tuple(HistoryWord("okay", t + 0.1, t + 0.4) for t in range(int(history_s)))
    preload = Preload(
        "You are Sam.",
        _speechlike(history_s, 1),
        _speechlike(history_s, 2),
        [],
        system_words=words,
    )
    type(create_adapter(card, clock)).prepare(card)

    async def one(i: int) -> RolloutResult:
        job = RolloutJob(point, card, i, i, _speechlike(live_s, 10 + i), preload)
        return await run_rollout(job, create_adapter(card, clock), clock, ProtocolParams())

    return list(await asyncio.gather(*(one(i) for i in range(sessions))))
