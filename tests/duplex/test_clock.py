"""The frame clock of the stock-protocol adapter: 80 ms input deadlines, output on stream time.

Against :class:`pmc.testing.duplex.FakeMoshi`, which answers each frame the moment it is
decoded, so where each answer belongs on the stream clock is known.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from pmc.clock import NS_PER_S, RealClock
from pmc.corpus import Channel
from pmc.harness._protocol import ProtocolParams
from pmc.harness._rollout import RolloutJob, RolloutResult, run_rollout
from pmc.points import Point, PointKind
from pmc.systems import EventKind, Family, Preload, SystemCard, create_adapter
from pmc.testing.duplex import FakeMoshi

FRAME_NS = 80_000_000
LIVE_FRAMES = 20
"""1.6 s of live audio; the pause drain adds 3 s of silence frames."""
TYPICAL_LATE_MS = 5.0
"""Most frames leave within this of their deadline (the harness bench's p99 target)."""
FRAME_MS = 80.0
"""No frame may be a whole frame late, nor an answer take a whole frame to come back. The
suite shares two cores with other processes, whose bursts make single frames tens of ms late;
`pmc bench duplex` reports the lateness percentiles themselves."""


def _point() -> Point:
    return Point(
        point_id="pause-fake",
        kind=PointKind.PAUSE,
        conversation_id="fake",
        user=Channel.A,
        system=Channel.B,
        history_start_conv_s=0.0,
        stream_start_conv_s=10.0,
        boundary_conv_s=10.8,
        boundary_stream_s=0.8,
        boundary_end_conv_s=11.2,
        boundary_end_stream_s=1.2,
        stream_end_conv_s=11.6,
    )


async def _rollout(url: str) -> RolloutResult:
    card = SystemCard("fake-moshi", "moshi-stock", Family.DUPLEX, endpoint=url, frame_ms=80)
    clock = RealClock()
    live = (0.1 * np.sin(np.arange(LIVE_FRAMES * 1920) / 10)).astype(np.float32)
    empty = np.zeros(0, dtype=np.float32)
    job = RolloutJob(_point(), card, 0, 0, live, Preload("", empty, empty, []))
    adapter = create_adapter(card, clock)
    type(adapter).prepare(card)
    return await run_rollout(job, adapter, clock, ProtocolParams())


@pytest.mark.slow
def test_frames_leave_on_80_ms_deadlines_and_answers_land_where_they_arrived() -> None:
    fake = FakeMoshi()

    async def main() -> RolloutResult:
        async with fake.running() as url:
            return await _rollout(url)

    result = asyncio.run(main())
    trace = result.trace
    t0 = trace.t0_ns
    # Every frame is due when its last sample has been spoken: t0 + (i + 1) x 80 ms, live
    # frames then the 3 s of silence frames of a pause point (drain: 3 s / 80 ms = 37.5).
    assert [t.index for t in trace.inputs] == list(range(len(trace.inputs)))
    assert all(t.scheduled_ns == t0 + (t.index + 1) * FRAME_NS for t in trace.inputs)
    assert len(trace.inputs) >= LIVE_FRAMES + 37
    assert trace.audit.lateness_p50_ms <= TYPICAL_LATE_MS
    assert trace.audit.lateness_max_ms < FRAME_MS
    assert fake.frames_received == len(trace.inputs)
    # Each answer is stamped on receipt, right after the frame that caused it was sent.
    audio = [o for o in trace.outputs if o.kind is EventKind.AUDIO]
    texts = [o for o in trace.outputs if o.kind is EventKind.TEXT]
    assert len(texts) == len(trace.inputs)
    sent = sorted(t.sent_ns for t in trace.inputs)
    for text, frame in zip(texts, sent, strict=True):
        assert 0 <= text.arrival_ns - frame < FRAME_MS * 1e6  # loopback, decode, event loop
    assert sum(o.samples for o in audio) >= (len(trace.inputs) - 2) * 1920
    # The played track puts each chunk at its arrival on the stream clock, so the tone starts
    # when the first answer arrived (about one frame in), not at 0, and never before it.
    first_s = (audio[0].arrival_ns - t0) / NS_PER_S
    track = result.played.track
    onset_s = int(np.argmax(np.abs(track) > 0.05)) / 24_000
    assert first_s >= 0.08
    assert first_s - 0.001 <= onset_s <= first_s + 0.03
    assert not np.any(np.abs(track[: int(first_s * 24_000) - 24]) > 0.01)
