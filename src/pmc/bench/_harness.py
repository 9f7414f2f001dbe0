"""The harness bench: many real-time rollouts at once against a system whose latency is known.

For each concurrency N, N rollouts stream live input over loopback websockets to the fake
system of :mod:`pmc.testing.loopback`, all in one event loop (so their streaming loops share a
core, as in a real run). Each has its own stream clock origin t0, staggered at random over the
first half second, and streams about 2 s of speech-like noise then silence until its reply has
been played. The bench reports how late input frames left (p50, p99, max over every frame of
every rollout) and how far the response latency measured from the played track is from the
latency the fake was told to produce (Real-time harness issue: 8, 32, 64 and 128 rollouts).

The fake runs in a child process by default, as a real system runs elsewhere: its work would
otherwise compete with the rollouts' and be counted against the harness. ``same_loop`` puts it
in the rollouts' own event loop instead (the harder case).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from pmc.audio import SAMPLE_RATE, FloatArray
from pmc.bench._usage import own_usage
from pmc.clock import NS_PER_S, Clock, RealClock, responsive_interpreter
from pmc.harness import FrameTiming, TraceRecorder, frame_ns, stream_frames
from pmc.systems import (
    EventKind,
    Family,
    SystemAdapter,
    SystemCard,
    TransportError,
    create_adapter,
)
from pmc.testing.loopback import (
    LATENCY_MS,
    LoopbackBehaviour,
    fake_system_process,
    serve_fake_system,
)

CONCURRENCY = (8, 32, 64, 128)
"""The concurrency levels the Real-time harness issue asks for."""
FRAME_MS = 20
"""Live input frames of a hosted system (docs/architecture.md "Protocol")."""
SPEECH_S = 2.0
"""Speech-like input per rollout, before the silence the system replies into."""
SPEECH_RMS = 0.1
"""Level of the speech-like input (about -20 dBFS, a normal speaking level)."""
SYLLABLE_HZ = 4.0
"""Envelope rate of the speech-like input (about four syllables a second)."""
STAGGER_S = 0.5
"""Rollout origins are spread at random over this long, as rollouts of a run start unevenly."""
START_MARGIN_S = 0.2
"""Between the last connection opening and the earliest origin, so no rollout starts late."""
TAIL_MS = 300.0
"""Silence streamed past the reply's expected end, room for a late reply to be played."""
REPLY_TIMEOUT_S = 5.0
"""How long after its input ends a rollout still waits for the reply before it is failed."""
CARD = SystemCard(
    name="loopback-fake",
    adapter="loopback-pcm",
    family=Family.HOSTED,
    description="pmc.testing.loopback: a fake with a known response latency",
    frame_ms=FRAME_MS,
)


@dataclass(frozen=True)
class HarnessBenchRow:
    """What one concurrency level measured; times in milliseconds.

    Attributes:
        concurrency: Rollouts run at once.
        rollouts: Rollouts that completed (input streamed, reply received).
        failed: Rollouts that lost their connection or got no reply in time.
        late_rollouts: Completed rollouts with a frame later than ``LATE_BOUND_MS``.
        frames: Input frames sent by the completed rollouts.
        lateness_p50_ms: Median input frame lateness, over all frames of all rollouts.
        lateness_p99_ms: Its 99th percentile.
        lateness_max_ms: The latest frame.
        error_p50_ms: Median absolute error of the measured response latency.
        error_p99_ms: Its 99th percentile over rollouts.
        error_max_ms: The worst rollout.
        error_mean_ms: Mean signed error (measured minus known; positive means measured late).
        reply_late_max_ms: The fake system's own lateness in sending a reply (a part of the
            error that the harness does not cause).
        harness_error_p99_ms: 99th percentile of the error net of the fake's own lateness:
            how far the measured latency is from the one the fake actually produced (what it
            was told plus how late it says it sent), the harness's own part.
        harness_error_max_ms: The worst rollout, net of the fake's lateness.
        latency_ms: The known response latency.
        wall_s: Wall time of the level, connections included.
        cpu_s: CPU time the process used meanwhile (the clock's spin-waits included).
        preemptions: Times the OS took the CPU from the process meanwhile (involuntary context
            switches): other processes wanted its core (the fake's child process among them).
    """

    concurrency: int
    rollouts: int
    failed: int
    late_rollouts: int
    frames: int
    lateness_p50_ms: float
    lateness_p99_ms: float
    lateness_max_ms: float
    error_p50_ms: float
    error_p99_ms: float
    error_max_ms: float
    error_mean_ms: float
    reply_late_max_ms: float
    harness_error_p99_ms: float
    harness_error_max_ms: float
    latency_ms: float
    wall_s: float
    cpu_s: float
    preemptions: int

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (a level where nothing completed has nulls, not NaN)."""
        return {
            k: None if isinstance(v, float) and math.isnan(v) else v
            for k, v in asdict(self).items()
        }


@dataclass(frozen=True)
class RolloutOutcome:
    """One completed rollout: its frames' lateness and its measured response latency."""

    lateness_ns: tuple[int, ...]
    measured_latency_ms: float
    error_ms: float
    """Measured minus known latency."""
    reply_late_ms: float
    """How late the fake sent its reply by its own clock (reported by the fake)."""
    late: bool
    """The timing audit marked it: a frame left later than ``LATE_BOUND_MS``."""


@dataclass(frozen=True)
class _Plan:
    """What every rollout of a level streams."""

    frames: tuple[bytes, ...]
    """Float32 frames as bytes (``stream_frames`` takes bytes; the adapter converts)."""
    frame_ns: int
    speech_end_ms: float
    """End of speech on the stream clock: the end of the last speech frame."""
    speech_frames: int
    latency_ms: float
    duration_s: float


def speech_like(seconds: float, seed: int = 0) -> FloatArray:
    """Noise under a syllable-rate envelope: every 20 ms frame is well above the speech gate."""
    n = round(seconds * SAMPLE_RATE)
    rng = np.random.default_rng(seed)
    t = np.arange(n) / SAMPLE_RATE
    envelope = 0.6 + 0.4 * np.sin(2 * np.pi * SYLLABLE_HZ * t)  # RMS 0.66, never below 0.2
    noise = rng.standard_normal(n) * (SPEECH_RMS / 0.66)
    return np.clip(noise * envelope, -1.0, 1.0).astype(np.float32)


def _plan(behaviour: LoopbackBehaviour, speech_s: float, seed: int) -> _Plan:
    samples = round(FRAME_MS * SAMPLE_RATE / 1000)
    speech_frames = round(speech_s * 1000 / FRAME_MS)
    speech = speech_like(speech_frames * FRAME_MS / 1000, seed)
    silent = math.ceil((behaviour.latency_ms + behaviour.reply_ms + TAIL_MS) / FRAME_MS)
    audio = np.concatenate([speech, np.zeros(silent * samples, dtype=np.float32)])
    frames = tuple(audio[i : i + samples].tobytes() for i in range(0, len(audio), samples))
    return _Plan(
        frames=frames,
        frame_ns=frame_ns(samples, SAMPLE_RATE),
        speech_end_ms=speech_frames * FRAME_MS,
        speech_frames=speech_frames,
        latency_ms=behaviour.latency_ms,
        duration_s=len(frames) * FRAME_MS / 1000,
    )


@dataclass(frozen=True)
class _Recorded:
    """What one rollout observed, kept raw until the level is over."""

    index: int
    t0_ns: int
    inputs: list[FrameTiming]
    recorder: TraceRecorder
    reply: dict[str, Any]


async def _rollout(
    adapter: SystemAdapter, clock: Clock, t0_ns: int, plan: _Plan, index: int
) -> _Recorded:
    """Stream one rollout from ``t0_ns``, keeping everything it receives.

    Nothing is analysed here: reconstruction waits until every rollout of the level has ended,
    so that it takes no time from the streaming loops of the others.
    """
    recorder = TraceRecorder(clock)
    reply: dict[str, Any] = {}

    async def collect() -> None:
        async for event in adapter.events():
            recorder.received(event)
            if event.kind is EventKind.SIGNAL and event.detail.get("type") == "reply":
                reply.update(event.detail)
                return  # the fake sends its signal after the last audio byte

    async def send(i: int, frame: bytes) -> None:
        await adapter.send_frame(np.frombuffer(frame, dtype=np.float32))

    collector = asyncio.get_running_loop().create_task(collect())
    try:
        async with asyncio.timeout(plan.duration_s + REPLY_TIMEOUT_S):
            inputs = await stream_frames(clock, plan.frames, plan.frame_ns, send, t0_ns)
            await collector
    finally:
        collector.cancel()
        await adapter.close()
        with contextlib.suppress(asyncio.CancelledError, TransportError):
            await collector
    if not reply:
        raise TransportError(f"rollout {index}: the connection closed without a reply")
    return _Recorded(index, t0_ns, inputs, recorder, reply)


def _measure(recorded: _Recorded, plan: _Plan) -> RolloutOutcome:
    """The response latency on the played track, against the known one."""
    reply = recorded.reply
    if reply.get("end_of_speech_frame") != plan.speech_frames - 1:
        raise RuntimeError(f"rollout {recorded.index}: the fake ended speech elsewhere ({reply})")
    trace, played = recorded.recorder.finish(
        "bench", CARD.name, recorded.index, recorded.t0_ns, recorded.inputs, CARD.to_dict()
    )
    heard = np.flatnonzero(played.track)
    if not heard.size:
        raise TransportError(f"rollout {recorded.index}: the reply had no audio")
    measured = float(heard[0]) * 1000 / SAMPLE_RATE - plan.speech_end_ms
    return RolloutOutcome(
        lateness_ns=tuple(t.lateness_ns for t in trace.inputs),
        measured_latency_ms=measured,
        error_ms=measured - plan.latency_ms,
        reply_late_ms=float(reply.get("send_late_ms", math.nan)),
        late=trace.audit.late,
    )


async def _connect(adapter: SystemAdapter) -> SystemAdapter:
    await adapter.connect()
    return adapter


@dataclass(frozen=True)
class LevelResult:
    """One concurrency level, before summary."""

    concurrency: int
    outcomes: list[RolloutOutcome]
    failed: int
    wall_s: float
    cpu_s: float
    preemptions: int


async def run_level(
    concurrency: int,
    behaviour: LoopbackBehaviour,
    speech_s: float = SPEECH_S,
    seed: int = 0,
    url: str | None = None,
) -> LevelResult:
    """Run ``concurrency`` rollouts at once in the running event loop.

    Args:
        concurrency: Rollouts at once.
        behaviour: The fake system's, for the plan (and for the fake itself when served here).
        speech_s: Speech-like input per rollout.
        seed: Seeds the input noise and the start stagger.
        url: Where the fake already runs; None serves a fresh one in this very event loop.
    """
    start = time.perf_counter()
    cpu_start, preempted_start = own_usage()
    clock = RealClock()
    plan = _plan(behaviour, speech_s, seed)
    rng = np.random.default_rng(seed)
    offsets_ns = (rng.uniform(0.0, STAGGER_S, concurrency) * NS_PER_S).astype(np.int64)
    async with contextlib.AsyncExitStack() as stack:
        if url is None:
            url = await stack.enter_async_context(serve_fake_system(behaviour))
        card = replace(CARD, endpoint=url, concurrency=concurrency)
        opened = await asyncio.gather(
            *(_connect(create_adapter(card, clock)) for _ in range(concurrency)),
            return_exceptions=True,
        )
        base_ns = clock.now_ns() + round(START_MARGIN_S * NS_PER_S)

        async def one(index: int, adapter: SystemAdapter | BaseException) -> _Recorded:
            if isinstance(adapter, BaseException):
                raise adapter
            return await _rollout(adapter, clock, base_ns + int(offsets_ns[index]), plan, index)

        results = await asyncio.gather(
            *(one(i, a) for i, a in enumerate(opened)), return_exceptions=True
        )
    wall_s = time.perf_counter() - start
    cpu_end, preempted_end = own_usage()
    outcomes = []
    for result in results:
        try:
            if isinstance(result, BaseException):
                raise result
            outcomes.append(_measure(result, plan))
        except (TransportError, TimeoutError):
            continue  # a failed rollout, counted below; anything else is a bug and propagates
    return LevelResult(
        concurrency,
        outcomes,
        len(results) - len(outcomes),
        wall_s,
        cpu_end - cpu_start,
        preempted_end - preempted_start,
    )


def _percentile(values: Sequence[float], q: float) -> float:
    """``q``-th percentile in ms, rounded to the microsecond; NaN when there is nothing."""
    return round(float(np.percentile(values, q)), 3) if len(values) else math.nan


def summarise(level: LevelResult, latency_ms: float) -> HarnessBenchRow:
    """One row from a level's completed rollouts."""
    outcomes = level.outcomes
    late_ms = (
        np.array([x for o in outcomes for x in o.lateness_ns], dtype=np.float64) / 1e6
    ).tolist()
    errors = [o.error_ms for o in outcomes]
    absolute = [abs(e) for e in errors]
    harness = [
        abs(o.error_ms - o.reply_late_ms) for o in outcomes if math.isfinite(o.reply_late_ms)
    ]
    return HarnessBenchRow(
        concurrency=level.concurrency,
        rollouts=len(outcomes),
        failed=level.failed,
        late_rollouts=sum(o.late for o in outcomes),
        frames=len(late_ms),
        lateness_p50_ms=_percentile(late_ms, 50),
        lateness_p99_ms=_percentile(late_ms, 99),
        lateness_max_ms=_percentile(late_ms, 100),
        error_p50_ms=_percentile(absolute, 50),
        error_p99_ms=_percentile(absolute, 99),
        error_max_ms=_percentile(absolute, 100),
        error_mean_ms=round(float(np.mean(errors)), 3) if errors else math.nan,
        reply_late_max_ms=_percentile([o.reply_late_ms for o in outcomes], 100),
        harness_error_p99_ms=_percentile(harness, 99),
        harness_error_max_ms=_percentile(harness, 100),
        latency_ms=latency_ms,
        wall_s=round(level.wall_s, 2),
        cpu_s=round(level.cpu_s, 2),
        preemptions=level.preemptions,
    )


def bench_harness(
    concurrency: Sequence[int] = CONCURRENCY,
    latency_ms: float = LATENCY_MS,
    speech_s: float = SPEECH_S,
    seed: int = 0,
    same_loop: bool = False,
) -> list[HarnessBenchRow]:
    """Run each concurrency level in its own event loop, one after the other.

    Args:
        concurrency: Rollouts at once, per level.
        latency_ms: The fake system's known response latency.
        speech_s: Speech-like input per rollout.
        seed: Seeds the input noise and the start stagger.
        same_loop: Serve the fake system in the rollouts' own event loop, where its work
            competes with theirs, instead of in a child process (as a real system would be:
            elsewhere).
    """
    behaviour = LoopbackBehaviour(latency_ms=latency_ms)
    rows = []
    with responsive_interpreter():
        for n in concurrency:
            with contextlib.ExitStack() as stack:
                url = None if same_loop else stack.enter_context(fake_system_process(behaviour))
                level = asyncio.run(run_level(n, behaviour, speech_s, seed, url))
            rows.append(summarise(level, latency_ms))
    return rows
