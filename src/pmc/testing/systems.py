"""A scripted in-process system: says given things at given stream times, or fails on purpose.

For tests of the protocol and the run stage. A card with ``adapter = "scripted"`` takes
``params.say``: a list of ``{"at_s", "seconds", "text", "rms"}`` (a tone of that length and
loudness starting at that stream time, with its text). ``params.stall_ms`` makes it block
the whole process for that long on its 50th frame, as a badly behaved in-process model would.

A card with ``adapter = "held"`` says nothing and does not connect until the file
``params.release`` exists: a run that cannot finish until a test lets it (the kill-and-resume
test kills such a run mid-way on any machine, however fast).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from pmc.audio import FloatArray
from pmc.clock import Clock
from pmc.systems import LocalAdapter, SystemCard, TransportError, register_adapter


def tone(seconds: float, rms: float = 0.1, rate: int = 24_000, hz: float = 220.0) -> FloatArray:
    """A sine tone with the given RMS (a stand-in for speech that opens the gate)."""
    t = np.arange(round(seconds * rate)) / rate
    wave = rms * np.sqrt(2) * np.sin(2 * np.pi * hz * t)
    return np.asarray(wave, dtype=np.float32)


@register_adapter("scripted")
class ScriptedSystem(LocalAdapter):
    """Speaks a script; fails where the test says.

    Class attributes let a test make it fail without changing its card (a changed card would be
    a different system): the next ``refuse`` connections are refused; with ``drop_after_frames``
    the session closes mid-stream after that many frames.
    """

    refuse: ClassVar[int] = 0
    drop_after_frames: ClassVar[int | None] = None

    def __init__(self, card: SystemCard, clock: Clock) -> None:
        super().__init__(card, clock)
        self.commits: list[int] = []
        self.frames_received = 0
        self.samples_received = 0

    async def connect(self) -> None:
        """Refuse if told to."""
        if ScriptedSystem.refuse > 0:
            ScriptedSystem.refuse -= 1
            raise TransportError("connection refused (scripted)")

    def on_start(self) -> None:
        """Schedule the script."""
        for line in self.card.params.get("say", []):
            item: dict[str, Any] = dict(line)
            audio = tone(float(item["seconds"]), float(item.get("rms", 0.1)))
            at = self.stream_ns(float(item["at_s"]))
            self.spawn(self.speak_at(at, audio, str(item.get("text", "")), 0.2))

    async def on_frame(self, samples: FloatArray) -> None:
        """Count frames; drop the session if told to."""
        self.frames_received += 1
        self.samples_received += len(samples)
        stall_ms = self.card.params.get("stall_ms")
        if stall_ms and self.frames_received == 50:
            time.sleep(float(stall_ms) / 1000)  # noqa: ASYNC251 - blocks the loop on purpose
        if self.drop_after_frames is not None and self.frames_received > self.drop_after_frames:
            raise TransportError("connection closed by the system (scripted)")

    async def end_of_input(self) -> None:
        """Note when input was ended."""
        self.commits.append(self.clock.now_ns())


@register_adapter("held")
class HeldSystem(LocalAdapter):
    """Listens and says nothing, like never-speak, but connects only once a file exists.

    ``params.release`` names the file. While it is missing, :meth:`connect` polls for it without
    blocking the event loop and, if ``params.waiting`` names a file, creates that file first, so a
    test can see that the run has reached a held rollout. The harness allows connecting
    ``params.preload_timeout_s``; a card for this adapter sets it far beyond any test, so that
    waiting is never a failed connection. On a virtual clock waiting leaves no mark: its time
    stands still until the stream starts, so a held rollout records exactly what an unheld one
    does.
    """

    POLL_S = 0.01
    """How often the release file is looked for: 10 ms, short next to a rollout."""

    async def connect(self) -> None:
        """Wait until the release file exists."""
        release = Path(str(self.card.params["release"]))
        waiting = self.card.params.get("waiting")
        if waiting is not None and not await asyncio.to_thread(release.exists):
            await asyncio.to_thread(Path(str(waiting)).touch)
        while not await asyncio.to_thread(release.exists):  # noqa: ASYNC110 - no file event
            await asyncio.sleep(self.POLL_S)
