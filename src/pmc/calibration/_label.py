"""A track's labels from its window decodes: an instant counts only where every window agrees."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import numpy as np
import numpy.typing as npt

from pmc.audio import SAMPLE_RATE, FloatArray
from pmc.calibration._decode import WindowDecoder, decode_track, load_decoder
from pmc.calibration._settings import LabelSettings
from pmc.calibration._windows import WindowDecode, WindowVerdict
from pmc.gate import Interval


class CellLabel(IntEnum):
    """The label of one cell of a track (ints, so a track's cells fit a numpy array)."""

    SILENCE = 0
    SPEECH = 1
    AMBIGUOUS = 2
    """The covering windows disagree or one is unsure; left out of the calibration."""


@dataclass(frozen=True)
class TrackLabels:
    """A track's labels: speech, silence, the rest ambiguous; and the utterances in the speech.

    Attributes:
        duration_s: Length of the track.
        speech: Stretches every covering window calls speech.
        silence: Stretches every covering window calls silence.
        utterances: The reference utterances: speech stretches joined across gaps shorter
            than ``join_s``, or as long as two windows' overlap if no window calls any of the
            gap silence; their starts are the reference onsets.
    """

    duration_s: float
    speech: tuple[Interval, ...]
    silence: tuple[Interval, ...]
    utterances: tuple[Interval, ...]

    @property
    def ambiguous_s(self) -> float:
        """Seconds labelled neither speech nor silence."""
        labelled = sum(i.duration_s for i in (*self.speech, *self.silence))
        return max(0.0, self.duration_s - labelled)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form; intervals as ``[start_s, end_s]``."""
        return {
            "duration_s": round(self.duration_s, 6),
            "speech": _spans(self.speech),
            "silence": _spans(self.silence),
            "utterances": _spans(self.utterances),
        }


def _spans(intervals: Iterable[Interval]) -> list[list[float]]:
    return [[round(i.start_s, 6), round(i.end_s, 6)] for i in intervals]


def label_windows(
    windows: Sequence[WindowDecode], samples: int, settings: LabelSettings
) -> TrackLabels:
    """A track's labels from its window decodes: every covering window must agree.

    A cell (``settings.cell_s``) is speech when every window covering it has a counted word
    there, silence when every covering window says no speech there, and ambiguous otherwise.
    """
    cell = round(settings.cell_s * SAMPLE_RATE)
    n = -(-samples // cell)
    centres = (np.arange(n) * cell + cell / 2) / SAMPLE_RATE
    cover = np.zeros(n, dtype=np.int32)
    speech = np.zeros(n, dtype=np.int32)
    unsure = np.zeros(n, dtype=np.int32)
    for w in windows:
        a, b = np.searchsorted(centres, [w.start_s, w.end_s])
        cover[a:b] += 1
        verdict = w.verdict(settings)
        if verdict is WindowVerdict.UNSURE:
            unsure[a:b] += 1
        elif verdict is WindowVerdict.SPEECH:
            said = np.zeros(n, dtype=bool)
            for word in w.words():
                lo, hi = np.searchsorted(centres, [max(word.start_s, w.start_s), word.end_s])
                said[lo:hi] = True
            speech[a:b] += said[a:b]
    labels = np.full(n, CellLabel.AMBIGUOUS, dtype=np.int8)
    covered = cover > 0
    labels[covered & (speech == cover)] = CellLabel.SPEECH
    labels[covered & (speech == 0) & (unsure == 0)] = CellLabel.SILENCE
    runs = {k: _runs(labels == k) for k in CellLabel}
    utterances = _join(
        runs[CellLabel.SPEECH],
        labels,
        round(settings.join_s * SAMPLE_RATE / cell),
        round((settings.window_s - settings.hop_s) * SAMPLE_RATE / cell),
    )
    return TrackLabels(
        duration_s=samples / SAMPLE_RATE,
        speech=_intervals(runs[CellLabel.SPEECH], cell, samples),
        silence=_intervals(runs[CellLabel.SILENCE], cell, samples),
        utterances=_intervals(utterances, cell, samples),
    )


def label_audio(
    track: FloatArray,
    settings: LabelSettings | None = None,
    decoder: WindowDecoder | None = None,
) -> TrackLabels:
    """Decode and label one track in this process (loads Whisper when no decoder is given)."""
    settings = settings or LabelSettings()
    decoder = decoder if decoder is not None else load_decoder(settings.asr)
    return label_windows(decode_track(decoder, track, settings), len(track), settings)


def _runs(mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
    """``[start, end)`` cell indices of the runs of True."""
    edges = np.diff(mask.astype(np.int8), prepend=np.int8(0), append=np.int8(0))
    return np.stack([np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)], axis=1)


def _join(
    runs: npt.NDArray[np.int64], labels: npt.NDArray[np.int8], short: int, overlap: int
) -> npt.NDArray[np.int64]:
    """Merge speech runs across gaps under ``short`` cells, or up to ``overlap`` without silence.

    Two windows that disagree inside continuous speech (one drops a word it holds only in
    part) leave at most the hop they share ambiguous; a longer stretch that no window calls
    silence is no evidence that the speech went on.
    """
    if len(runs) < 2:
        return runs
    joined = [list(runs[0])]
    for start, end in runs[1:]:
        width = start - joined[-1][1]
        silent = bool(np.any(labels[joined[-1][1] : start] == CellLabel.SILENCE))
        if width < short or (width <= overlap and not silent):
            joined[-1][1] = end
        else:
            joined.append([start, end])
    return np.asarray(joined, dtype=np.int64)


def _intervals(runs: npt.NDArray[np.int64], cell: int, samples: int) -> tuple[Interval, ...]:
    return tuple(
        Interval(int(a) * cell / SAMPLE_RATE, min(int(b) * cell, samples) / SAMPLE_RATE)
        for a, b in runs
    )
