"""An open speakerphone without echo cancellation: the system hears itself, late and quieter.

docs/conditions.md "Echo". What the system played comes back into its input ``delay`` later,
scaled by ``gain``, added to whatever else it hears at that moment. The echo is placed on the
stream clock by the played track (the samples as the caller heard them), so it arrives exactly
``delay`` after each played sample, to the sample.
"""

from __future__ import annotations

import numpy as np

from pmc.audio import FloatArray


class Echo:
    """The echo path, fed the played track as it grows and read one input frame at a time.

    Args:
        delay_ms: From a sample's playing to its echo's arrival at the input.
        gain_db: The echo's level relative to what was played (negative: quieter).
        rate: The input's sample rate (the played track is at the same rate).
    """

    def __init__(self, delay_ms: float, gain_db: float, rate: int) -> None:
        self.delay = round(delay_ms / 1000.0 * rate)
        self.gain = float(10.0 ** (gain_db / 20.0))
        self.rate = rate

    def frame(self, played: FloatArray, first: int, size: int) -> FloatArray:
        """The echo in input samples ``first`` to ``first + size`` (zeros where none arrives).

        ``played``: the played track on the stream clock, as far as it is known; a sample it
        does not reach yet has played nothing.
        """
        out = np.zeros(size, dtype=np.float32)
        lo, hi = first - self.delay, first + size - self.delay
        src_lo, src_hi = max(lo, 0), min(hi, len(played))
        if src_hi > src_lo:
            out[src_lo - lo : src_hi - lo] = self.gain * played[src_lo:src_hi]
        return out

    def add(self, frame: FloatArray, played: FloatArray, first: int) -> FloatArray:
        """``frame`` (input samples from ``first``) with the echo added."""
        return np.asarray(frame + self.frame(played, first, len(frame)), dtype=np.float32)
