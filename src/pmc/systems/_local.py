"""What every in-process system shares: an event queue stamped with the clock, and the stream clock.

Local systems run in the harness's own process, offline (docs/architecture.md "Systems"). They wait
on the rollout's clock, so on a virtual clock they run faster than real time and give the same
trace.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Coroutine
from typing import Any

import numpy as np

from pmc.audio import FloatArray
from pmc.clock import NS_PER_S, Clock
from pmc.systems._adapter import EventKind, Preload, SystemAdapter, SystemEvent
from pmc.systems._card import SystemCard


class LocalAdapter(SystemAdapter):
    """Base of the in-process systems: subclasses react to frames and call :meth:`emit`."""

    def __init__(self, card: SystemCard, clock: Clock) -> None:
        super().__init__(card, clock)
        self._queue: asyncio.Queue[SystemEvent | None] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._frames = 0
        self._t0_ns: int | None = None
        self.preloaded: Preload | None = None

    @property
    def frame_ns(self) -> int:
        """One input frame's duration."""
        return self.card.frame_samples * NS_PER_S // self.card.sample_rate

    @property
    def t0_ns(self) -> int | None:
        """The stream clock's origin, known once the first frame has arrived."""
        return self._t0_ns

    def stream_ns(self, t_stream_s: float) -> int:
        """A stream-clock time as a clock instant (after the first frame has arrived)."""
        if self._t0_ns is None:
            raise RuntimeError("the stream has not started")
        return self._t0_ns + round(t_stream_s * NS_PER_S)

    async def connect(self) -> None:
        """Nothing to open."""

    async def preload(self, preload: Preload) -> None:
        """Keep the history for systems that use it."""
        self.preloaded = preload

    async def send_frame(self, samples: FloatArray) -> None:
        """Count the frame (the first one fixes the stream clock) and pass it on."""
        if self._t0_ns is None:
            # Frame 0 is sent when its last sample has been spoken, one frame after the origin.
            self._t0_ns = self.clock.now_ns() - self.frame_ns
            self.on_start()
        self._frames += 1
        await self.on_frame(samples)

    def on_start(self) -> None:
        """Called once, when the first live frame arrives."""

    async def on_frame(self, samples: FloatArray) -> None:
        """React to one live input frame."""

    async def end_of_input(self) -> None:
        """Local systems find the end of a turn themselves; nothing to do."""

    def emit(
        self,
        kind: EventKind,
        samples: FloatArray | None = None,
        text: str = "",
        detail: dict[str, Any] | None = None,
    ) -> None:
        """Queue one event, stamped now."""
        audio = np.zeros(0, dtype=np.float32) if samples is None else samples
        event = SystemEvent(kind, self.clock.now_ns(), audio, text, detail or {})
        self._queue.put_nowait(event)

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run a background behaviour (a scheduled reply) until the session closes."""
        self._tasks.append(asyncio.get_running_loop().create_task(work))

    async def speak_at(self, at_ns: int, audio: FloatArray, text: str, chunk_s: float) -> None:
        """Send ``audio`` in chunks, each when it would start playing, from ``at_ns`` on."""
        await self.clock.sleep_until(at_ns)
        if text:
            self.emit(EventKind.TEXT, text=text)
        step = max(1, round(chunk_s * self.card.sample_rate))
        for i, first in enumerate(range(0, len(audio), step)):
            await self.clock.sleep_until(at_ns + round(i * chunk_s * NS_PER_S))
            self.emit(EventKind.AUDIO, audio[first : first + step])

    async def events(self) -> AsyncIterator[SystemEvent]:
        """Queued events until the session is closed."""
        while (event := await self._queue.get()) is not None:
            yield event

    async def close(self) -> None:
        """Stop background behaviours and end the event stream."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._queue.put_nowait(None)
