"""A system that says nothing and writes down every input frame as it received it.

A card with ``adapter = "recording"`` takes ``params.record``: a JSON-lines file it appends one
line to per session, when the session closes: the receipt time of each frame on the run's clock
(``received_ns``) and each frame's samples summed (``sums``) and its peak (``peaks``), enough to
tell a frame from silence and from the frame before it. What it received is what a network
condition must deliver (docs/conditions.md): each frame no earlier than its deadline plus the
delay drawn for it, a lost one concealed.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from pmc.audio import FloatArray
from pmc.clock import Clock
from pmc.systems import LocalAdapter, SystemCard, register_adapter


@dataclass(frozen=True)
class RecordingParams:
    """A recording card's ``[params]``: ``record`` is required."""

    record: str


@register_adapter("recording")
class RecordingSystem(LocalAdapter):
    """Listens, says nothing, and records each frame's receipt."""

    PARAMS: ClassVar[type[Any]] = RecordingParams
    params: RecordingParams

    def __init__(self, card: SystemCard, clock: Clock) -> None:
        super().__init__(card, clock)
        self._received: list[int] = []
        self._sums: list[float] = []
        self._peaks: list[float] = []

    async def send_frame(self, samples: FloatArray) -> None:
        """Stamp the frame on arrival, before anything else is done with it."""
        self._received.append(self.clock.now_ns())
        self._sums.append(float(np.sum(samples, dtype=np.float64)))
        self._peaks.append(float(np.max(np.abs(samples))) if len(samples) else 0.0)
        await super().send_frame(samples)

    async def close(self) -> None:
        """Append this session's record."""
        line = {"received_ns": self._received, "sums": self._sums, "peaks": self._peaks}
        await asyncio.to_thread(_append, Path(self.params.record), json.dumps(line) + "\n")
        await super().close()


def _append(path: Path, text: str) -> None:
    with path.open("a") as handle:
        handle.write(text)
