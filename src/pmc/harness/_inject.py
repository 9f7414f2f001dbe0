"""The person's clip at a talk-over point, played over the system's reply (closed loop).

The clip starts where the system's own reply started on the played track (the onset scoring
uses, found by the monitor) plus the offset the person's talk had from the start of the reply
it came over (docs/architecture.md "Protocol"). Until the reply starts, and after the clip,
the system hears silence.
"""

from __future__ import annotations

import numpy as np

from pmc.audio import FloatArray
from pmc.harness._monitor import SpeechMonitor


class Injection:
    """Where the clip goes on the stream clock, once the system's reply has started.

    Args:
        clip: The person's talk, at the card's rate.
        offset_s: How long after the reply's onset it starts.
        monitor: What the system has said so far (its ``reply_onset``).
    """

    def __init__(self, clip: FloatArray, offset_s: float, monitor: SpeechMonitor) -> None:
        self.clip = clip
        self.offset = round(offset_s * monitor.rate)
        self.monitor = monitor
        self.at: int | None = None
        """The clip's first sample on the stream clock (None until the reply has started)."""

    @property
    def end(self) -> int | None:
        """Just past the clip's last sample on the stream clock (None until placed)."""
        return None if self.at is None else self.at + len(self.clip)

    def place(self) -> int | None:
        """Place the clip if the reply has started; its first sample, or None."""
        if self.at is None and self.monitor.reply_onset is not None:
            self.at = self.monitor.reply_onset + self.offset
        return self.at

    def covers(self, first: int, size: int) -> bool:
        """Whether a sample of the clip falls in samples ``first`` to ``first + size``."""
        at = self.place()
        return at is not None and max(first, at) < min(first + size, at + len(self.clip))

    def frame(self, first: int, size: int) -> FloatArray | None:
        """Samples ``first`` to ``first + size`` of the stream with the clip where it falls.

        None where no sample of the clip falls in them (the frame is then silence).
        """
        at = self.place()
        if at is None or not self.covers(first, size):
            return None
        lo, hi = max(first, at), min(first + size, at + len(self.clip))
        out = np.zeros(size, dtype=np.float32)
        out[lo - first : hi - first] = self.clip[lo - at : hi - at]
        return out
