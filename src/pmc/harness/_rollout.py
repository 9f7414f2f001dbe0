"""One rollout: preload the history, stream the live audio in real time, record, stop by the rules.

The receiver records every message the moment the adapter hands it over (its stamp was taken
on receipt); the streamer sends frames at absolute deadlines and, at each deadline past the
live audio, asks the protocol whether to go on. Nothing here transcribes, scores or writes
files: that happens after the rollout, outside the loop (docs/architecture.md "Protocol").
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from dataclasses import dataclass

import numpy as np

from pmc.audio import FloatArray
from pmc.clock import NS_PER_S, Clock, RealClock, VirtualClock
from pmc.conditions import Echo, Network, conceal
from pmc.harness._clock_kind import ClockKind
from pmc.harness._inject import Injection
from pmc.harness._monitor import SpeechMonitor
from pmc.harness._playback import Played
from pmc.harness._protocol import ProtocolParams, Schedule, Send, hosted_commit
from pmc.harness._record import ProtocolRecord
from pmc.harness._streamer import Tick, frame_ns, stream_until
from pmc.harness._trace import RolloutTrace, TraceRecorder
from pmc.points import Point
from pmc.systems import (
    EventKind,
    Preload,
    ReferenceReply,
    SystemAdapter,
    SystemCard,
    TransportError,
    create_adapter,
)

HANDSHAKE_TIMEOUT_S = 60.0
"""Connecting and preloading may take this long (a cold hosted session, a long history), unless
the card's ``params.preload_timeout_s`` says otherwise (a teacher-forced history takes one model
step per 80 ms frame of it)."""
CLOSE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class RolloutJob:
    """Everything one rollout needs, read from disk before the streaming starts.

    Attributes:
        point: The point.
        card: The system's card.
        rollout: Which rollout of the point (0 is the scored one).
        seed: For systems that sample.
        live: The live stream, mono float32 at the card's rate.
        preload: The identity prompt and the history.
        reference: The reply a reference system replays (None for everyone else).
        clip: At a talk-over point, the person's talk over the reply, at the card's rate.
        record_heard: Keep what the system heard (the run changed it: conditions).
        background: What the system hears where the person is silent, on the stream clock from
            its first sample (the noise of the run's conditions, running on past the live
            stream); None: silence.
        echo: The system's own played output fed back into every input frame (a condition).
        network: Each input frame delayed, some lost, on the way to the system (a condition).
    """

    point: Point
    card: SystemCard
    rollout: int
    seed: int
    live: FloatArray
    preload: Preload
    reference: ReferenceReply | None = None
    clip: FloatArray | None = None
    record_heard: bool = False
    background: FloatArray | None = None
    echo: Echo | None = None
    network: Network | None = None


@dataclass(frozen=True)
class RolloutResult:
    """A finished rollout: its trace, its played track, the raw output and what it heard.

    ``heard``: every input frame as sent, back to back (only where the job asked for it).
    """

    trace: RolloutTrace
    played: Played
    raw: FloatArray
    heard: FloatArray | None = None


async def run_here(job: RolloutJob, kind: ClockKind, params: ProtocolParams) -> RolloutResult:
    """One attempt of ``job`` in this event loop, on a fresh clock of ``kind`` and adapter.

    The local runner and every Ray worker run rollouts through this (docs/scaling.md).
    """
    clock: Clock = VirtualClock() if kind is ClockKind.VIRTUAL else RealClock()
    adapter = create_adapter(job.card, clock)
    return await run_rollout(job, adapter, clock, params)


def _frames(
    live: FloatArray, size: int, end: int | None = None, background: FloatArray | None = None
) -> list[FloatArray]:
    """The live audio in frames, the last one padded with silence (or ``background``).

    With ``end``, the audio up to sample ``end`` only, the last frame shorter where ``end`` falls
    inside one.
    """
    if end is not None:
        cut = live[:end]
        return [cut[i : i + size] for i in range(0, len(cut), size)]
    pad = np.zeros(-len(live) % size, dtype=np.float32)
    if background is not None:
        part = background[len(live) : len(live) + len(pad)]
        pad[: len(part)] = part
    padded = np.concatenate([live, pad])
    return [padded[i : i + size] for i in range(0, len(padded), size)]


async def run_rollout(
    job: RolloutJob, adapter: SystemAdapter, clock: Clock, params: ProtocolParams
) -> RolloutResult:
    """Run one rollout against ``adapter``; transport failures raise :class:`TransportError`."""
    card = job.card
    limit_s = card.preload_timeout_s
    limit_s = float(HANDSHAKE_TIMEOUT_S if limit_s is None else limit_s)
    try:
        async with asyncio.timeout(limit_s):
            await adapter.connect()
            if adapter.TAKES_REFERENCE:
                adapter.give_reference(job.reference)
            await adapter.preload(job.preload)
    except TimeoutError:
        await _close(adapter)
        raise TransportError(f"handshake timed out after {limit_s:g} s") from None
    except OSError as exc:
        await _close(adapter)
        raise TransportError(f"cannot connect: {exc}") from exc
    except TransportError:
        await _close(adapter)  # a session refused mid-handshake is still open at the system
        raise

    recorder = TraceRecorder(clock)
    t0 = clock.now_ns()
    point = job.point
    clip, offset = job.clip, point.inject_offset_s
    talks_over = point.kind.talks_over and clip is not None and offset is not None
    boundary = round(point.boundary_stream_s * card.sample_rate)
    monitor = SpeechMonitor(t0, card.sample_rate, onset_from=boundary if talks_over else None)
    injection = None
    if talks_over and clip is not None and offset is not None:
        injection = Injection(clip, offset, monitor)
    receiver = asyncio.get_running_loop().create_task(_receive(adapter, recorder, monitor))
    length = frame_ns(card.frame_samples, card.sample_rate)
    commit = hosted_commit(
        point.kind, card.family, adapter.ENDPOINTS_TALK_OVER, card.endpoints_everywhere
    )
    # A system told where input ends hears the live audio up to the boundary and no further (the
    # cuts are padded to whole 80 ms frames, and a boundary may fall inside a frame).
    end = round(point.boundary_stream_s * card.sample_rate) if commit else None
    live = _frames(job.live, card.frame_samples, end, job.background)
    live_samples = sum(len(frame) for frame in live)
    silence = np.zeros(card.frame_samples, dtype=np.float32)

    def quiet(i: int) -> FloatArray:
        """What frame ``i`` holds where the person says nothing: the background, or silence."""
        if job.background is None:
            return silence
        part = job.background[i * card.frame_samples : (i + 1) * card.frame_samples]
        return np.concatenate([part, silence[len(part) :]]) if len(part) < len(silence) else part

    schedule = Schedule(
        point.kind,
        card.family,
        len(live),
        length,
        point.boundary_stream_s,
        monitor,
        params,
        audio_only=not adapter.SENDS_TEXT,
        injection=injection,
        endpoints_talk_over=adapter.ENDPOINTS_TALK_OVER,
        endpoints_everywhere=card.endpoints_everywhere,
    )
    committed_ns: int | None = None
    listen_ns: int | None = None
    heard: list[FloatArray] = []

    # The network's fate of every frame the rollout can send: the live stream, then the cap.
    frames_max = len(live) + math.ceil((params.cap_s + 1.0) * NS_PER_S / length)
    network = job.network.schedule(frames_max, length) if job.network is not None else ()
    arrived: FloatArray | None = None  # the last frame the network delivered

    def due_ns(i: int) -> int:
        delay = network[i].delay_ns if i < len(network) else 0
        if end is not None and i == len(live) - 1:
            return live_samples * NS_PER_S // card.sample_rate + delay  # the boundary
        return (i + 1) * length + delay

    async def next_frame(i: int) -> FloatArray | Tick:
        if receiver.done():
            receiver.result()  # re-raises the transport's failure
            raise TransportError("the system closed the session mid-stream")
        decision = schedule.decide(i)
        if isinstance(decision, Tick):
            return decision
        if decision is Send.LIVE:
            return live[i]
        heard = None
        if decision is Send.CLIP and injection is not None:
            heard = injection.frame(i * card.frame_samples, card.frame_samples)
        return quiet(i) if heard is None else np.asarray(quiet(i) + heard, dtype=np.float32)

    async def send(i: int, frame: FloatArray) -> None:
        nonlocal committed_ns, listen_ns, arrived
        if committed_ns is not None and listen_ns is None and schedule.listening:
            listen_ns = clock.now_ns()
            await adapter.listen()
        if job.echo is not None:
            played = recorder.played_so_far(t0)
            frame = job.echo.add(frame, played, i * card.frame_samples)
        if job.network is not None:
            if i < len(network) and network[i].lost:
                frame = conceal(frame, arrived, job.network.concealment)
            else:
                arrived = frame
        await adapter.send_frame(frame)
        if job.record_heard:
            heard.append(frame)
        if i == len(live) - 1 and schedule.commit:
            # Right after the last live frame, on its deadline: the boundary (docs/architecture.md
            # "Protocol").
            committed_ns = clock.now_ns()
            await adapter.end_of_input()

    try:
        timings, stop_ns = await stream_until(clock, length, t0, next_frame, send, due_ns)
    except OSError as exc:
        raise TransportError(f"connection lost: {exc}") from exc
    finally:
        await _close(adapter)
        receiver.cancel()
        with contextlib.suppress(asyncio.CancelledError, TransportError, OSError):
            await receiver

    stop_s = (stop_ns - t0) / NS_PER_S
    protocol = ProtocolRecord(
        kind=point.kind,
        family=card.family,
        adapter_version=adapter.VERSION,
        clock=ClockKind.VIRTUAL if isinstance(clock, VirtualClock) else ClockKind.REAL,
        seed=job.seed,
        live_s=live_samples / card.sample_rate,
        boundary_stream_s=point.boundary_stream_s,
        boundary_end_stream_s=point.boundary_end_stream_s,
        stop_reason=schedule.stop_reason,
        stop_stream_s=stop_s,
        end_of_input_stream_s=None if committed_ns is None else (committed_ns - t0) / NS_PER_S,
        reference_point_id=job.reference.source_point_id if job.reference else None,
        params=params,
        reply_onset_stream_s=_seconds(monitor.reply_onset, card.sample_rate),
        clip_stream_s=_seconds(injection.at if injection else None, card.sample_rate),
        clip_s=None if injection is None else len(injection.clip) / card.sample_rate,
        listen_stream_s=None if listen_ns is None else (listen_ns - t0) / NS_PER_S,
    )
    trace, played = recorder.finish(
        point.point_id,
        card.name,
        job.rollout,
        t0,
        timings,
        card.to_dict(),
        length_s=stop_s,
        protocol=protocol,
        bound_ms=params.late_bound_ms,
    )
    kept = np.concatenate(heard) if heard else np.zeros(0, dtype=np.float32)
    return RolloutResult(trace, played, recorder.raw_audio(), kept if job.record_heard else None)


def _seconds(sample: int | None, rate: int) -> float | None:
    return None if sample is None else sample / rate


async def _receive(adapter: SystemAdapter, recorder: TraceRecorder, monitor: SpeechMonitor) -> None:
    """Record every event as it arrives and keep the stop rules informed."""
    async for event in adapter.events():
        recorder.received(event)
        if event.kind is EventKind.AUDIO:
            monitor.audio(event.arrival_ns, event.samples)
        elif event.kind is EventKind.TEXT:
            monitor.text(event.text)
        elif event.kind is EventKind.INTERRUPTED:
            monitor.interrupt(event.arrival_ns)


async def _close(adapter: SystemAdapter) -> None:
    """Close the session; a system that will not close is left behind, not waited on."""
    with contextlib.suppress(TimeoutError, TransportError, OSError):
        async with asyncio.timeout(CLOSE_TIMEOUT_S):
            await adapter.close()
