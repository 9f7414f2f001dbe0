"""The frame clock of the stock-protocol adapter: 80 ms input deadlines, output on stream time.

Against :class:`pmc.testing.duplex_server.FakeMoshi`, which answers each frame the moment it is
decoded, so where each answer belongs on the stream clock is known; and the delay the protocol's
codec adds to everything a server says (:data:`pmc.testing.duplex_server.OPUS_DELAY_SAMPLES`).
"""

from __future__ import annotations

import asyncio
import random

import numpy as np
import pytest
import sphn

from pmc.clock import NS_PER_S, RealClock
from pmc.corpus import Channel
from pmc.duplex_server._wire import FRAME_SAMPLES, SAMPLE_RATE
from pmc.gate import OnsetRule, refine_end, speech_intervals
from pmc.harness._protocol import ProtocolParams
from pmc.harness._rollout import RolloutJob, RolloutResult, run_rollout
from pmc.points import Point, PointKind
from pmc.scoring import ScoreSettings
from pmc.systems import EventKind, Family, Preload, SystemCard, create_adapter
from pmc.systems._duplex_client._opus import OpusDecoder
from pmc.testing.duplex_server import (
    FADE_SAMPLES,
    OPUS_DELAY_SAMPLES,
    OPUS_POST_ECHO_S,
    OPUS_PRE_ECHO_S,
    FakeMoshi,
)
from pmc.testing.hosted import answer_audio
from pmc.testing.hosted._behaviour import REPLY_TEXT

FRAME_NS = 80_000_000
LIVE_FRAMES = 20
"""1.6 s of live audio; the pause drain adds 3 s of silence frames."""
FRAME_MS = 80.0
"""How late frames leave depends on the machine (`pmc bench duplex` reports the percentiles);
this test asserts what holds however loaded it is."""


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
    assert all(t.sent_ns >= t.scheduled_ns for t in trace.inputs)  # never early
    assert fake.frames_received == len(trace.inputs)
    # Each answer is stamped on receipt, right after the frame that caused it was sent.
    audio = [o for o in trace.outputs if o.kind is EventKind.AUDIO]
    texts = [o for o in trace.outputs if o.kind is EventKind.TEXT]
    assert len(texts) == len(trace.inputs)
    sent = sorted(t.sent_ns for t in trace.inputs)
    # The fake runs in the harness's own event loop: the answer to frame i is stamped after
    # frame i left and, stamped on receipt, before frame i + 1 has been out a whole frame (a
    # stalled process delays both alike).
    for i, (text, frame) in enumerate(zip(texts, sent, strict=True)):
        assert text.arrival_ns >= frame
        if i + 1 < len(sent):
            assert text.arrival_ns < sent[i + 1] + FRAME_MS * 1e6
    assert sum(o.samples for o in audio) >= (len(trace.inputs) - 2) * 1920
    # The played track puts each chunk at its arrival on the stream clock, so the tone starts
    # when the first answer arrived (about one frame in), not at 0, and never before it.
    first_s = (audio[0].arrival_ns - t0) / NS_PER_S
    track = result.played.track
    onset_s = int(np.argmax(np.abs(track) > 0.05)) / 24_000
    assert first_s >= 0.08
    assert first_s - 0.001 <= onset_s <= first_s + 0.03
    assert not np.any(np.abs(track[: int(first_s * 24_000) - 24]) > 0.01)


def test_the_codec_delays_speech_by_opus_delay() -> None:
    # The measurement behind OPUS_DELAY_SAMPLES, again: speech put after digital silence at
    # seeded random samples of 80 ms frames, encoded frame by frame as a server does and
    # decoded page by page as the adapter does, comes out that much later; scoring's onset
    # moves by that much, or by up to OPUS_PRE_ECHO_S less (the codec's pre-echo).
    voice = answer_audio(REPLY_TEXT)
    draws = random.Random(14)
    lags, delays = set(), []
    for _ in range(20):
        start = draws.randrange(2, 6) * FRAME_SAMPLES + draws.randrange(FRAME_SAMPLES)
        sent = np.zeros(start + len(voice) + 4 * FRAME_SAMPLES, dtype=np.float32)
        sent[start : start + len(voice)] = voice
        sent = sent[: len(sent) // FRAME_SAMPLES * FRAME_SAMPLES]
        writer, decoder = sphn.OpusStreamWriter(SAMPLE_RATE), OpusDecoder(SAMPLE_RATE)
        pages = [bytes(writer.append_pcm(f)) for f in sent.reshape(-1, FRAME_SAMPLES)]
        assert all(pages)  # a page for every frame: nothing is held back
        decoded = np.concatenate([decoder.decode(page) for page in pages])
        assert len(decoded) == len(sent)
        speech = sent[start : start + SAMPLE_RATE // 2]
        lags.add(
            max(range(200), key=lambda lag: float(np.dot(decoded[start + lag :][:12000], speech)))
        )
        onsets = [speech_intervals(x, onset=OnsetRule.ENVELOPE)[0].start_s for x in (sent, decoded)]
        delays.append(round((onsets[1] - onsets[0]) * SAMPLE_RATE))
    print("codec delay (samples):", sorted(lags), "by onset:", delays)
    assert lags <= {OPUS_DELAY_SAMPLES - 1, OPUS_DELAY_SAMPLES}
    earliest = OPUS_DELAY_SAMPLES - round(OPUS_PRE_ECHO_S * SAMPLE_RATE)
    assert all(earliest <= d <= OPUS_DELAY_SAMPLES + 2 for d in delays), delays


TALK_OVER_REPLY = (
    "Right, I see what you mean. Tell me a little more about that, and about the beach, "
    "and about what the dog did when it got there."
)
"""The duplex talk-over test's reply (tests/systems/test_duplex_talk_over.py), which it cuts."""


def test_the_codec_ends_a_cut_at_most_its_post_echo_late() -> None:
    # The measurement behind OPUS_POST_ECHO_S, again: the talk-over test's reply, cut at seeded
    # samples inside its speech and faded as the fakes fade a stop, encoded and decoded as
    # above, ends where scoring finds it (the last gate interval's end, refined) at most that
    # much after the cut and the codec's delay.
    voice = answer_audio(TALK_OVER_REPLY)
    gate = ScoreSettings().gate
    fade = np.linspace(1.0, 0.0, FADE_SAMPLES + 1, dtype=np.float32)[:-1]

    def end_of(track: np.ndarray) -> int:
        last = speech_intervals(track, gate)[-1]
        return refine_end(track, round(last.end_s * SAMPLE_RATE), gate, SAMPLE_RATE)

    draws = random.Random(14)
    lates: list[float] = []
    while len(lates) < 20:
        cut = draws.randrange(SAMPLE_RATE // 2, len(voice) - SAMPLE_RATE // 2)
        start = draws.randrange(2, 4) * FRAME_SAMPLES + draws.randrange(FRAME_SAMPLES)
        sent = np.zeros(start + cut + 4 * FRAME_SAMPLES, dtype=np.float32)
        sent[start : start + cut] = voice[:cut]
        sent[start + cut - FADE_SAMPLES : start + cut] *= fade
        sent = sent[: len(sent) // FRAME_SAMPLES * FRAME_SAMPLES]
        if not 0 <= start + cut - end_of(sent) <= SAMPLE_RATE * 3 // 1000:
            continue  # between words: the speech had ended before the cut
        writer, decoder = sphn.OpusStreamWriter(SAMPLE_RATE), OpusDecoder(SAMPLE_RATE)
        pages = [bytes(writer.append_pcm(f)) for f in sent.reshape(-1, FRAME_SAMPLES)]
        decoded = np.concatenate([decoder.decode(page) for page in pages])
        lates.append((end_of(decoded) - (start + cut + OPUS_DELAY_SAMPLES)) / SAMPLE_RATE)
    print("decoded end after the cut (ms):", sorted(round(late * 1000, 1) for late in lates))
    assert max(lates) <= OPUS_POST_ECHO_S
    assert max(lates) > 0.003  # what the allowance is for: the codec's tail, past 3 ms
