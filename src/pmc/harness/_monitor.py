"""What the stop rules need to know while a rollout runs: has the system spoken, and when last.

The monitor places each output chunk on the stream clock as playback would (start at the later
of arrival and the end of the previous chunk; an interruption cuts the queue) and marks where
it is loud enough to open the speech gate. It is deliberately light, a few numpy operations per
chunk, because it runs inside the streaming loop; the real gate and the words are computed
after the rollout, in scoring (docs/architecture.md "Protocol": nothing heavy runs in the loop).
"""

from __future__ import annotations

import numpy as np

from pmc.audio import FloatArray
from pmc.clock import NS_PER_S
from pmc.gate import GateParams, OnsetRule, speech_intervals


class SpeechMonitor:
    """Output so far, on the stream clock, in samples from its origin."""

    def __init__(
        self,
        t0_ns: int,
        sample_rate: int,
        gate: GateParams | None = None,
        onset_from: int | None = None,
    ) -> None:
        self.t0_ns = t0_ns
        self.rate = sample_rate
        self.gate = gate or GateParams()
        self.window = max(1, round(self.gate.window_s * sample_rate))
        self.played_until = 0
        """Where queued playback ends (samples)."""
        self.first_speech: int | None = None
        self.last_speech_end: int | None = None
        self.words = False
        """The system has sent text with a word in it (its own transcript of what it says)."""
        self.any_audio = False
        self.onset_from = onset_from
        """Find the first onset at or after this sample (the boundary), where a clip is timed
        from the system's reply; None: no need."""
        self.reply_onset: int | None = None
        """That onset, placed as scoring places it (the gate's envelope onset on the played
        track), once its interval has passed the gate."""
        # The played track from a few windows before the mark, kept until the onset is found.
        # The gate's windows lie on the played track's grid, as in scoring; two windows before
        # the mark leave room for the envelope's search.
        mark = onset_from or 0
        self._origin = max(0, (mark // self.window - 2) * self.window)
        self._track = np.zeros(0, dtype=np.float32)

    def sample_at(self, t_ns: int) -> int:
        """A clock instant as a sample index on the stream clock."""
        return round((t_ns - self.t0_ns) * self.rate / NS_PER_S)

    def audio(self, arrival_ns: int, samples: FloatArray) -> None:
        """One chunk received: queue it for playback and note where it is loud."""
        if not len(samples):
            return
        self.any_audio = True
        start = max(self.sample_at(arrival_ns), self.played_until)
        self.played_until = start + len(samples)
        if self.onset_from is not None and self.reply_onset is None:
            self._keep(start, samples)
        n = len(samples) // self.window
        if n == 0:
            return
        frames = samples[: n * self.window].reshape(n, self.window).astype(np.float64)
        loud = np.flatnonzero(np.sqrt((frames**2).mean(axis=1)) >= self.gate.open_rms)
        if loud.size:
            if self.first_speech is None:
                self.first_speech = start + int(loud[0]) * self.window
            self.last_speech_end = start + (int(loud[-1]) + 1) * self.window

    def _keep(self, start: int, samples: FloatArray) -> None:
        """Add a chunk to the played track and look for the onset, if the chunk can hold one.

        The gate runs only on chunks loud enough to hold speech: a quieter one can neither
        open an interval nor lengthen one (the gate holds only down to its release level).
        """
        lo = start - self._origin  # the chunk's place in the kept track
        if lo + len(samples) <= 0:
            return
        piece = samples[max(0, -lo) :].astype(np.float32)
        lo = max(lo, 0)
        if len(self._track) < lo:
            self._track = np.concatenate([self._track, np.zeros(lo - len(self._track), np.float32)])
        self._track = np.concatenate([self._track[:lo], piece])
        mark = self.onset_from or 0
        if self._origin + len(self._track) <= mark:
            return
        if not len(piece) or float(np.abs(piece).max()) < self.gate.release_rms:
            return
        found = speech_intervals(self._track, self.gate, self.rate, OnsetRule.ENVELOPE)
        onsets = [self._origin + round(i.start_s * self.rate) for i in found]
        self.reply_onset = next((o for o in onsets if o >= mark), None)
        if self.reply_onset is not None:
            self._track = np.zeros(0, dtype=np.float32)

    def text(self, text: str) -> None:
        """Text received: words, if it holds any."""
        if any(ch.isalnum() for ch in text):
            self.words = True

    def interrupt(self, at_ns: int) -> None:
        """Playback stopped at ``at_ns``: nothing queued after it will be heard."""
        at = self.sample_at(at_ns)
        self.played_until = min(self.played_until, at)
        self._track = self._track[: max(0, at - self._origin)]
        if self.last_speech_end is not None and self.last_speech_end > at:
            self.last_speech_end = max(at, self.first_speech or at)

    def silent_for(self, now_ns: int) -> float | None:
        """Seconds since the last loud sample finished playing; None if never loud or still loud.

        Quiet audio still queued counts as silence: a full-duplex system sends a frame for
        every frame it hears, silent or not, so its queue always reaches past the present.
        """
        now = self.sample_at(now_ns)
        if self.last_speech_end is None or self.last_speech_end > now:
            return None
        return (now - self.last_speech_end) / self.rate
