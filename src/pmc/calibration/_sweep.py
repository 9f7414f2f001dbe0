"""The sweep: every gate setting run over the labelled tracks and scored on onsets and misses."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pmc.audio import SAMPLE_RATE, FloatArray
from pmc.calibration._batch import LabelledRun
from pmc.calibration._label import TrackLabels
from pmc.calibration._result import Calibration, CalibrationRow
from pmc.calibration._settings import LabelSettings, SweepGrid
from pmc.calibration._tracks import read_track
from pmc.gate import DEFAULT_ONSET, GateParams, Interval, OnsetRule, speech_intervals
from pmc.progress import Advance, Start


@dataclass
class _Tally:
    errors_s: list[float] = field(default_factory=list)
    utterances: int = 0
    missed: int = 0
    false_onsets: int = 0


def _overlaps(a: Interval, b: Interval) -> bool:
    return a.start_s < b.end_s and b.start_s < a.end_s


def _score(gate: Sequence[Interval], labels: TrackLabels, tally: _Tally) -> None:
    """Match a track's gate intervals to its utterances and add the result to ``tally``."""
    for utterance in labels.utterances:
        tally.utterances += 1
        onsets = [g.start_s for g in gate if _overlaps(g, utterance)]
        if onsets:
            tally.errors_s.append(min(onsets) - utterance.start_s)
        else:
            tally.missed += 1
    for g in gate:
        if not any(_overlaps(g, u) for u in labels.utterances) and any(
            _overlaps(g, s) for s in labels.silence
        ):
            tally.false_onsets += 1


def _ms(value: float | np.floating[Any]) -> float:
    return round(float(value) * 1000.0, 1)


def _row(params: GateParams, tally: _Tally) -> CalibrationRow:
    errors = np.asarray(tally.errors_s, dtype=np.float64)
    absolute = np.abs(errors)
    some = errors.size > 0
    return CalibrationRow(
        gate=params,
        utterances=tally.utterances,
        missed=tally.missed,
        false_onsets=tally.false_onsets,
        median_abs_onset_ms=_ms(np.median(absolute)) if some else None,
        p90_abs_onset_ms=_ms(np.percentile(absolute, 90)) if some else None,
        mean_abs_onset_ms=_ms(np.mean(absolute)) if some else None,
        median_onset_bias_ms=_ms(np.median(errors)) if some else None,
        design=params == GateParams(),
    )


def sweep(
    tracks: Iterable[tuple[FloatArray, TrackLabels]],
    grid: SweepGrid | None = None,
    advance: Advance | None = None,
    onset: OnsetRule = DEFAULT_ONSET,
) -> list[CalibrationRow]:
    """Run every gate setting of ``grid`` over the tracks and score it against the labels.

    Args:
        tracks: Played tracks (mono, :data:`pmc.audio.SAMPLE_RATE`) with their labels; read one
            at a time.
        grid: The settings to try (:class:`SweepGrid`'s defaults when None).
        advance: Called after each track.
        onset: Where a gate interval's onset is placed: as scores place it by default, or on
            the window grid, to compare with the paper.
    """
    params = (grid or SweepGrid()).params()
    tallies = [_Tally() for _ in params]
    for audio, labels in tracks:
        for p, tally in zip(params, tallies, strict=True):
            _score(speech_intervals(audio, p, SAMPLE_RATE, onset), labels, tally)
        if advance:
            advance()
    return [_row(p, t) for p, t in zip(params, tallies, strict=True)]


def calibrate(
    run_dir: Path,
    labelled: LabelledRun,
    settings: LabelSettings | None = None,
    grid: SweepGrid | None = None,
    start: Start | None = None,
    onset: OnsetRule = DEFAULT_ONSET,
) -> Calibration:
    """Sweep the gate over a run's labelled tracks (Table 8's analog); defaults when None.

    Onsets are placed by ``onset``, the scores' own rule unless told otherwise.
    """
    settings = settings or LabelSettings()
    grid = grid or SweepGrid()
    advance = start(len(labelled.tracks)) if start else None
    tracks = ((read_track(key.folder(run_dir)), labels) for key, labels in labelled.tracks)
    rows = sweep(tracks, grid, advance, onset)
    all_labels = [labels for _, labels in labelled.tracks]
    return Calibration(
        run_id=run_dir.name,
        settings=settings,
        grid=grid,
        systems=tuple(sorted({key.system for key, _ in labelled.tracks})),
        tracks=len(all_labels),
        utterances=sum(len(t.utterances) for t in all_labels),
        speech_s=sum(i.duration_s for t in all_labels for i in t.speech),
        silence_s=sum(i.duration_s for t in all_labels for i in t.silence),
        ambiguous_s=sum(t.ambiguous_s for t in all_labels),
        rows=tuple(rows),
        onset=onset,
    )
