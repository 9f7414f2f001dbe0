"""The energy speech gate: where a track holds speech, by RMS over 20 ms windows.

Its settings are in docs/architecture.md "Metrics".
A shared helper below the pipeline stages. Curation uses :func:`speech_ratio` to check that a
pause gates as silence and its lead-in as speech; scoring uses :func:`speech_intervals` for onsets
and takeovers. Times are computed on integer sample indices and turned into seconds only at the
edge (one time base), so interval boundaries fall exactly on window edges.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

import numpy as np
import numpy.typing as npt

from pmc.audio import SAMPLE_RATE

_Spans = npt.NDArray[np.int64]
"""Speech spans as an ``(n, 2)`` array of ``[start, end)`` sample indices, in time order."""


class OnsetRule(StrEnum):
    """Where a gate interval's onset is placed (docs/architecture.md "Metrics")."""

    WINDOW = "window"
    """The start of its first window that passed the gate: the paper's onset, on a 20 ms grid."""
    ENVELOPE = "envelope"
    """Refined to the first sample where its speech begins (:func:`refine_onsets`), searched in
    its first window and the window before (a window holding only the first few ms of speech
    does not pass the gate itself)."""


DEFAULT_ONSET = OnsetRule.ENVELOPE
"""The onset rule of scores and of the gate's calibration, so both measure onsets alike."""

ENVELOPE_S = 0.002
"""The refining envelope's length: a few ms, so an onset lands within about that of the speech's
start even for speech just above the threshold (issue 14: latencies not quantised to 20 ms),
yet longer than one sample, so a single stray sample counts for little."""


TALK_QUIET_S = 1.0
"""Talk resumed within 1 s is the same talk after a breath (a pause between sentences), not a
stop followed by new talk: where a talk-over point asks whether talk ended, it must stay ended
this long (docs/architecture.md "Metrics")."""


@dataclass(frozen=True)
class GateParams:
    """The speech gate's settings; every score records them (docs/architecture.md "Metrics").

    Attributes:
        window_s: Length of the non-overlapping RMS windows, in seconds.
        open_rms: RMS at or above which a closed gate opens.
        release_ratio: While open, the gate holds as long as RMS is at least
            ``release_ratio * open_rms``.
        bridge_s: Gaps between intervals of at most this many seconds are bridged.
        min_s: Intervals shorter than this (after bridging) are dropped.
    """

    window_s: float = 0.02  # docs/architecture.md "Metrics": RMS over 20 ms windows.
    open_rms: float = 0.01  # docs/architecture.md "Metrics": opens at 0.01.
    # docs/architecture.md "Metrics": holds down to 0.005 (release ratio 0.5).
    release_ratio: float = 0.5
    bridge_s: float = 0.04  # docs/architecture.md "Metrics": bridges gaps up to 40 ms.
    min_s: float = 0.08  # docs/architecture.md "Metrics": drops intervals under 80 ms.

    def __post_init__(self) -> None:
        if not self.window_s > 0:
            raise ValueError(f"gate window_s must be positive, got {self.window_s}")
        if not self.open_rms > 0:
            raise ValueError(f"gate open_rms must be positive, got {self.open_rms}")
        if not 0 < self.release_ratio <= 1:
            raise ValueError(f"gate release_ratio must be in (0, 1], got {self.release_ratio}")
        if not self.bridge_s >= 0:
            raise ValueError(f"gate bridge_s must be non-negative, got {self.bridge_s}")
        if not self.min_s >= 0:
            raise ValueError(f"gate min_s must be non-negative, got {self.min_s}")

    @property
    def release_rms(self) -> float:
        """The RMS an open gate holds down to."""
        return self.release_ratio * self.open_rms

    def to_dict(self) -> dict[str, float]:
        """Plain-JSON form, as recorded beside every score."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GateParams:
        """Inverse of :meth:`to_dict`; a missing key takes its default."""
        defaults = cls()
        return cls(
            window_s=float(data.get("window_s", defaults.window_s)),
            open_rms=float(data.get("open_rms", defaults.open_rms)),
            release_ratio=float(data.get("release_ratio", defaults.release_ratio)),
            bridge_s=float(data.get("bridge_s", defaults.bridge_s)),
            min_s=float(data.get("min_s", defaults.min_s)),
        )


@dataclass(frozen=True)
class Interval:
    """A stretch of gated speech, in seconds from the first sample of the gated audio.

    Attributes:
        start_s: Where the speech begins.
        end_s: Where it ends (exclusive).
    """

    start_s: float
    end_s: float

    @property
    def duration_s(self) -> float:
        """Length of the interval in seconds."""
        return self.end_s - self.start_s


def window_rms(
    audio: npt.ArrayLike, window_s: float = GateParams.window_s, sample_rate: int = SAMPLE_RATE
) -> npt.NDArray[np.float64]:
    """RMS of each non-overlapping window; the last partial window is averaged over its own samples.

    Args:
        audio: Mono samples.
        window_s: Window length in seconds.
        sample_rate: Rate of ``audio`` in Hz.

    Returns:
        One RMS value per window (empty for empty audio).
    """
    samples = _mono(audio)
    width = _window_samples(window_s, sample_rate)
    return _window_rms(samples, width)


def speech_intervals(
    audio: npt.ArrayLike,
    params: GateParams = GateParams(),
    sample_rate: int = SAMPLE_RATE,
    onset: OnsetRule = OnsetRule.WINDOW,
) -> list[Interval]:
    """Where ``audio`` holds speech, by the hysteresis energy gate.

    The gate is docs/architecture.md "Metrics"'s.
    Steps, in this order:

    1. RMS over non-overlapping windows of ``params.window_s`` (the last partial window counted
       over its own samples).
    2. Hysteresis: a closed gate opens on a window with RMS >= ``open_rms``; an open gate stays
       open while RMS >= ``release_ratio * open_rms`` and closes on the first window below that.
       After a close, re-opening needs ``open_rms`` again.
    3. Bridging: gaps of at most ``bridge_s`` between intervals are filled.
    4. Dropping: intervals shorter than ``min_s`` are removed.

    Bridging comes before dropping, so two short bursts close together survive as one interval.
    With ``onset=OnsetRule.ENVELOPE`` each interval's start is then moved to the first sample of
    its speech (:func:`refine_onsets`); which stretches are speech does not change.

    Args:
        audio: Mono samples.
        params: The gate's settings.
        sample_rate: Rate of ``audio`` in Hz.
        onset: Where an interval starts.

    Returns:
        The intervals in time order, in seconds from the first sample; boundaries lie on window
        edges (starts too, with ``OnsetRule.WINDOW``), except that the last interval ends no
        later than the audio does.
    """
    samples = _mono(audio)
    spans = _speech_spans(samples, params, sample_rate)
    if onset is OnsetRule.ENVELOPE:
        spans = refine_onsets(samples, spans, params, sample_rate)
    return [Interval(int(a) / sample_rate, int(b) / sample_rate) for a, b in spans]


def refine_onsets(
    samples: npt.NDArray[np.floating[Any]],
    spans: _Spans,
    params: GateParams,
    sample_rate: int,
    envelope_s: float = ENVELOPE_S,
) -> _Spans:
    """Move each span's start to the first sample where its speech begins.

    A trailing envelope of :data:`ENVELOPE_S` (its RMS over the samples ending at each sample)
    is searched from the start of the window before the span's first window (never before the
    previous span's end) to the end of its first window. Its first crossing of
    ``params.open_rms`` is where the speech is loud enough to open the gate; the onset is where
    the envelope last rose above the release level before that crossing, as an open gate holds
    speech down to that level (a dip under it shorter than the envelope does not end the
    speech). Energy that fell back under the release level for an envelope's length before the
    first window (a click, a breath) is not the start. A first window that passed the gate
    always holds a crossing when it is a whole number of envelopes long; where none is found the
    start stays on the window edge.
    """
    width = _window_samples(params.window_s, sample_rate)
    length = _window_samples(envelope_s, sample_rate)
    opening = params.open_rms**2 * length  # energy over one envelope
    holding = opening * params.release_ratio**2
    out = spans.copy()
    previous_end = 0
    for row, (start, end) in enumerate(spans):
        lo = max(int(start) - width, previous_end)
        hi = min(int(start) + width, int(end))
        previous_end = int(end)
        # Samples before the search (and before the audio) count as far as the envelope reaches.
        head = max(lo - length + 1, 0)
        part = samples[head:hi].astype(np.float64)
        energy = np.concatenate([[0.0], np.cumsum(part * part)])
        ends = np.arange(lo, hi) - head + 1  # cumulative index just past each candidate
        envelope = energy[ends] - energy[np.maximum(ends - length, 0)]
        quiet = envelope < holding
        after = _after_last_run(quiet[: int(start) - lo], length)
        crossed = np.flatnonzero(envelope[after:] >= opening)
        if crossed.size:
            loud = after + int(crossed[0])
            out[row, 0] = lo + _after_last_run(quiet[:loud], length)
    return out


def refine_end(
    samples: npt.NDArray[np.floating[Any]],
    end: int,
    params: GateParams,
    sample_rate: int,
    envelope_s: float = ENVELOPE_S,
) -> int:
    """Move an interval's end (a window edge) to just past the last sample of its speech.

    The mirror of :func:`refine_onsets`: a leading envelope of :data:`ENVELOPE_S` (its RMS over
    the samples starting at each sample) is searched over the interval's last two windows and
    the window after it (whose RMS fell under the release level, though it may open with the
    speech's last few ms); the end is just past the last sample where the envelope is at the
    release level or above, as an open gate holds speech down to that level. Where none is
    found the end stays on the window edge.
    """
    width = _window_samples(params.window_s, sample_rate)
    length = _window_samples(envelope_s, sample_rate)
    holding = params.open_rms**2 * length * params.release_ratio**2
    lo, hi = max(0, end - 2 * width), min(end + width, len(samples))
    if hi <= lo:
        return end
    part = samples[lo : min(hi + length, len(samples))].astype(np.float64)
    energy = np.concatenate([[0.0], np.cumsum(part * part)])
    starts = np.arange(hi - lo)
    envelope = energy[np.minimum(starts + length, len(part))] - energy[starts]
    loud = np.flatnonzero(envelope >= holding)
    return lo + int(loud[-1]) + 1 if loud.size else end


def talk_end(
    samples: npt.NDArray[np.floating[Any]],
    at: int,
    params: GateParams,
    sample_rate: int,
    quiet_s: float = TALK_QUIET_S,
    intervals: Sequence[Interval] | None = None,
) -> int | None:
    """Where the talk under way at sample ``at`` ends, refined to the sample (None: no talk there).

    Talk is the gate's intervals with gaps of at most ``quiet_s`` between them, as scoring groups
    them when it asks whether a system stopped (docs/architecture.md "Metrics"); the points stage
    measures the person's own stop the same way, so that their replay scores what they did.
    ``intervals``: the gate's intervals of ``samples`` if the caller has them, with the onset
    rule scoring uses (it places their starts, and so which gaps are at most ``quiet_s``).
    """
    found = speech_intervals(samples, params, sample_rate) if intervals is None else intervals
    spans = [(round(i.start_s * sample_rate), round(i.end_s * sample_rate)) for i in found]
    quiet = round(quiet_s * sample_rate)
    groups: list[list[int]] = []
    for start, end in spans:
        if groups and start - groups[-1][1] <= quiet:
            groups[-1][1] = end
        else:
            groups.append([start, end])
    current = next((g for g in groups if g[0] <= at < g[1]), None)
    if current is None:
        return None
    return refine_end(samples, current[1], params, sample_rate)


def _after_last_run(flags: npt.NDArray[np.bool_], length: int) -> int:
    """The index just past the last run of at least ``length`` true flags (0 if there is none)."""
    counts = np.concatenate([[0], np.cumsum(flags)])
    if len(counts) <= length:
        return 0
    full = np.flatnonzero(counts[length:] - counts[:-length] == length)
    return int(full[-1]) + length if full.size else 0


def speech_ratio(
    audio: npt.ArrayLike, params: GateParams = GateParams(), sample_rate: int = SAMPLE_RATE
) -> float:
    """The share of the audio's duration that the gate counts as speech.

    Args:
        audio: Mono samples.
        params: The gate's settings.
        sample_rate: Rate of ``audio`` in Hz.

    Returns:
        Gated speech samples over all samples, in [0, 1]; 0.0 for empty audio.
    """
    samples = _mono(audio)
    if samples.size == 0:
        return 0.0
    spans = _speech_spans(samples, params, sample_rate)
    return float(np.sum(spans[:, 1] - spans[:, 0])) / samples.size


def _mono(audio: npt.ArrayLike) -> npt.NDArray[np.floating[Any]]:
    samples = np.asarray(audio)
    if samples.ndim != 1:
        raise ValueError(f"the speech gate takes mono audio (1-D), got shape {samples.shape}")
    if not np.issubdtype(samples.dtype, np.floating):
        samples = samples.astype(np.float64)
    return samples


def _window_samples(window_s: float, sample_rate: int) -> int:
    if sample_rate <= 0:
        raise ValueError(f"sample_rate must be positive, got {sample_rate}")
    width = round(window_s * sample_rate)
    if width < 1:
        raise ValueError(f"a {window_s} s window is under one sample at {sample_rate} Hz")
    return width


def _window_rms(samples: npt.NDArray[np.floating[Any]], width: int) -> npt.NDArray[np.float64]:
    n = samples.size
    full = n // width
    body = samples[: full * width].reshape(full, width).astype(np.float64)
    power = np.einsum("ij,ij->i", body, body) / width
    if n > full * width:
        tail = samples[full * width :].astype(np.float64)
        power = np.append(power, np.dot(tail, tail) / tail.size)
    return np.asarray(np.sqrt(power), dtype=np.float64)


def _speech_spans(
    samples: npt.NDArray[np.floating[Any]], params: GateParams, sample_rate: int
) -> _Spans:
    width = _window_samples(params.window_s, sample_rate)
    rms = _window_rms(samples, width)
    # Re-opening needs open_rms, never the release level: the reference implementation's quirk
    # (re-opening at the release threshold after a gap) is avoided on purpose; see _hysteresis.
    spans = _hysteresis(rms >= params.open_rms, rms >= params.release_rms) * width
    np.minimum(spans, samples.size, out=spans)
    spans = _bridge(spans, round(params.bridge_s * sample_rate))
    keep = spans[:, 1] - spans[:, 0] >= round(params.min_s * sample_rate)
    return spans[keep]


def _hysteresis(loud: npt.NDArray[np.bool_], held: npt.NDArray[np.bool_]) -> _Spans:
    """Open windows as ``[start, end)`` window indices.

    A gate that is open stays open through a run of ``held`` windows, so every open stretch lies
    inside one maximal run of ``held`` windows: it starts at the run's first ``loud`` window and
    ends with the run. A run with no ``loud`` window never opens the gate; the ``held`` windows
    before the first ``loud`` one are not speech either.

    Deliberately unlike the reference implementation (docs/decisions.md, section
    3): there, after a gap closes an interval, a window that only reaches the release level
    opens the next one. Here a closed gate always needs ``open_rms`` to open again.
    """
    held = held | loud  # a window loud enough to open is loud enough to hold
    edges = np.diff(held.astype(np.int8), prepend=np.int8(0), append=np.int8(0))
    run_starts = np.flatnonzero(edges == 1)
    run_ends = np.flatnonzero(edges == -1)
    loud_at = np.flatnonzero(loud)
    # The first loud window at or after each run's start; it opens the gate if it is in the run.
    pick = np.searchsorted(loud_at, run_starts)
    first_loud = np.append(loud_at, held.size)[pick]
    opens = first_loud < run_ends
    return np.stack([first_loud[opens], run_ends[opens]], axis=1).astype(np.int64)


def _bridge(spans: _Spans, max_gap: int) -> _Spans:
    """Merge spans whose gap to the previous span is at most ``max_gap`` samples."""
    if len(spans) < 2:
        return spans
    gaps = spans[1:, 0] - spans[:-1, 1]
    starts_new = np.concatenate([[True], gaps > max_gap])
    ends_group = np.concatenate([gaps > max_gap, [True]])
    return np.stack([spans[starts_new, 0], spans[ends_group, 1]], axis=1)


__all__ = [
    "DEFAULT_ONSET",
    "ENVELOPE_S",
    "GateParams",
    "Interval",
    "OnsetRule",
    "refine_end",
    "refine_onsets",
    "speech_intervals",
    "speech_ratio",
    "window_rms",
]
