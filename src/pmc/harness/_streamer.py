"""The real-time frame streamer: frame i leaves at t0 + (i + 1) x frame, never drifting.

A frame is sent when its last sample has been spoken (docs/architecture.md "Protocol"). Deadlines
are absolute, computed from t0, so a late send does not push later frames back; each frame's
scheduled and actual send times are kept for the timing audit.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TypeVar

from pmc.clock import NS_PER_S, Clock

F = TypeVar("F")


@dataclass(frozen=True)
class FrameTiming:
    """When one input frame was due and when it actually went out (clock nanoseconds)."""

    index: int
    scheduled_ns: int
    sent_ns: int

    @property
    def lateness_ns(self) -> int:
        """How late the send was (never negative: the streamer does not send early)."""
        return self.sent_ns - self.scheduled_ns


def frame_ns(frame_samples: int, sample_rate: int) -> int:
    """A frame's length in nanoseconds (exact for 20 and 80 ms at 24 kHz)."""
    return frame_samples * NS_PER_S // sample_rate


class Tick(Enum):
    """What a frame deadline brings besides a frame to send."""

    SKIP = "skip"
    """Nothing to send at this deadline (a hosted system after its end of input)."""
    STOP = "stop"
    """The stream is over."""


async def stream_until(
    clock: Clock,
    frame_length_ns: int,
    t0_ns: int,
    next_frame: Callable[[int], Awaitable[F | Tick]],
    send: Callable[[int, F], Awaitable[None]],
    due_ns: Callable[[int], int] | None = None,
) -> tuple[list[FrameTiming], int]:
    """Stream frames from ``t0_ns`` until ``next_frame`` says stop; frame i at t0 + (i+1) x frame.

    ``next_frame(i)`` is awaited at deadline i, so it can look at what has happened so far (the
    protocol's stop rules) and act on it (a hosted system's end of input). ``due_ns(i)``, when
    given, moves deadline i to ``t0 + due_ns(i)`` (a last frame shorter than the others is due
    when its last sample has been spoken). Returns the timings of the frames sent and the
    deadline at which the stream stopped.
    """
    timings: list[FrameTiming] = []
    i = 0
    while True:
        deadline = t0_ns + (due_ns(i) if due_ns else (i + 1) * frame_length_ns)
        await clock.sleep_until(deadline)
        frame = await next_frame(i)
        if frame is Tick.STOP:
            return timings, deadline
        if not isinstance(frame, Tick):
            sent = clock.now_ns()
            await send(i, frame)
            timings.append(FrameTiming(i, deadline, sent))
        i += 1


async def stream_frames(
    clock: Clock,
    frames: Sequence[bytes],
    frame_length_ns: int,
    send: Callable[[int, bytes], Awaitable[None]],
    t0_ns: int,
) -> list[FrameTiming]:
    """Send ``frames`` in real time from ``t0_ns`` (the instant the first sample is spoken).

    Args:
        clock: The clock to wait on.
        frames: The frames' bytes, in order.
        frame_length_ns: One frame's duration.
        send: Sends frame ``i``; awaited before the next deadline is waited for.
        t0_ns: The stream clock's origin on ``clock``.
    """
    timings = []
    for i, frame in enumerate(frames):
        deadline = t0_ns + (i + 1) * frame_length_ns
        await clock.sleep_until(deadline)
        sent = clock.now_ns()
        await send(i, frame)
        timings.append(FrameTiming(i, deadline, sent))
    return timings
