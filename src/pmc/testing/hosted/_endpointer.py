"""A deterministic energy endpointer: what the fake hosted servers use for server-side VAD.

It reads the received PCM in fixed windows, whatever the message sizes, so its decisions depend
only on the samples: a window is speech when its RMS reaches the threshold. Speech starts once
``min_speech_ms`` of speech windows have run (Gemini's ``prefixPaddingMs`` means this; OpenAI's
``prefix_padding_ms`` instead moves the reported start earlier, ``padding_ms``), and stops once
``silence_ms`` of silence windows have followed. Every instant is a sample index of the received
stream, so the fake knows exactly where on the stream clock it decided what.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from pmc.audio import FloatArray

WINDOW_MS = 20
"""The energy window: the speech gate's (docs/architecture.md "Metrics"), and one hosted input
frame."""
SPEECH_RMS = 0.01
"""A window at or above this RMS is speech: the speech gate's opening level (docs/architecture.md
"Metrics"), so the fake hears speech where scoring sees it. OpenAI's ``threshold`` of 0.5 maps to
it."""
THRESHOLD_TO_RMS = SPEECH_RMS / 0.5
"""A dialect's 0-1 threshold times this is the RMS level (0.5, the API default, is 0.01)."""


class Change(StrEnum):
    """What the endpointer decided."""

    STARTED = "started"
    STOPPED = "stopped"


@dataclass(frozen=True)
class VadEvent:
    """A decision, in samples of the received stream.

    Attributes:
        change: Speech started or stopped.
        at: Where speech started (less the padding) or where it ended (the end of its last
            speech window).
        decided: The sample whose arrival made the decision (the end of the deciding window).
    """

    change: Change
    at: int
    decided: int


class EnergyEndpointer:
    """Speech start and stop by window RMS, a minimum speech run and a silence window.

    Args:
        rate: Samples per second of the stream it reads.
        silence_ms: Silence that ends speech.
        min_speech_ms: Speech that must run before it counts as started (at least a window).
        padding_ms: How much earlier than the detected onset a start is reported.
        rms: The speech level.
    """

    def __init__(
        self,
        rate: int,
        silence_ms: float,
        min_speech_ms: float = WINDOW_MS,
        padding_ms: float = 0.0,
        rms: float = SPEECH_RMS,
    ) -> None:
        self.window = rate * WINDOW_MS // 1000
        self.silence_windows = max(1, math.ceil(silence_ms / WINDOW_MS))
        self.min_windows = max(1, math.ceil(min_speech_ms / WINDOW_MS))
        self.padding = round(padding_ms * rate / 1000)
        self.rms = rms
        self.received = 0
        """Samples read so far."""
        self.speaking = False
        self._pending = np.zeros(0, dtype=np.float32)
        self._run = 0  # consecutive speech windows while not speaking
        self._silent = 0  # consecutive silent windows while speaking
        self._last_speech_end = 0

    def push(self, samples: FloatArray) -> list[VadEvent]:
        """Read more samples; the decisions they complete, in order."""
        self.received += len(samples)
        data = np.concatenate([self._pending, samples])
        whole = len(data) // self.window * self.window
        self._pending = data[whole:]
        start = self.received - len(data)
        events = []
        for at in range(0, whole, self.window):
            window = data[at : at + self.window].astype(np.float64)
            end = start + at + self.window
            event = self._window(float(np.sqrt(np.mean(window**2))) >= self.rms, end)
            if event is not None:
                events.append(event)
        return events

    def _window(self, loud: bool, end: int) -> VadEvent | None:
        if not self.speaking:
            self._run = self._run + 1 if loud else 0
            if self._run < self.min_windows:
                return None
            self.speaking, self._silent = True, 0
            self._last_speech_end = end
            onset = end - self._run * self.window
            return VadEvent(Change.STARTED, max(0, onset - self.padding), end)
        if loud:
            self._silent = 0
            self._last_speech_end = end
            return None
        self._silent += 1
        if self._silent < self.silence_windows:
            return None
        self.speaking, self._run = False, 0
        return VadEvent(Change.STOPPED, self._last_speech_end, end)
