"""The sweep: the default gate against exact and Whisper labels, and what a calibration records."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from pmc.audio import SAMPLE_RATE, FloatArray
from pmc.calibration import (
    Calibration,
    CalibrationRow,
    SweepGrid,
    TrackLabels,
    calibration_markdown,
    sweep,
)
from pmc.gate import DEFAULT_ONSET, GateParams, Interval, OnsetRule
from pmc.scoring import ScoreSettings
from pmc.testing.systems import tone
from tests.calibration.conftest import LENGTH_S, SETTINGS


def row(
    rows: list[CalibrationRow], open_rms: float, release: float = 0.5, min_s: float = 0.08
) -> CalibrationRow:
    return next(
        r
        for r in rows
        if (r.gate.open_rms, r.gate.release_ratio, r.gate.min_s) == (open_rms, release, min_s)
    )


def test_the_sweep_on_exact_labels_finds_design_onsets_close_and_an_absurd_gate_deaf(
    scene: tuple[FloatArray, list[Interval]],
) -> None:
    """Onset error against the true onsets: the default gate within 60 ms (three 20 ms windows)."""
    track, truth = scene
    gaps = [0.0, *(x for t in truth for x in (t.start_s, t.end_s)), LENGTH_S]
    silence = tuple(Interval(a, b) for a, b in zip(gaps[::2], gaps[1::2], strict=True))
    exact = TrackLabels(LENGTH_S, tuple(truth), silence, tuple(truth))
    rows = sweep([(track, exact)], SweepGrid(open_rms=(0.005, 0.01, 0.5)))
    assert len(rows) == 3 * 4 * 3
    assert [r.design for r in rows].count(True) == 1
    design = row(rows, 0.01)
    assert design.design and design.gate == GateParams()
    assert (design.utterances, design.missed, design.false_onsets) == (3, 0, 0)
    assert design.median_abs_onset_ms is not None and design.median_abs_onset_ms < 60
    assert design.p90_abs_onset_ms is not None and design.p90_abs_onset_ms < 60
    assert row(rows, 0.005).false_onsets == 1  # the hum opens a gate at 0.005
    deaf = row(rows, 0.5)
    assert (deaf.missed, deaf.median_abs_onset_ms) == (3, None)


def test_the_sweep_on_whisper_labels_misses_nothing_at_the_design_gate(
    scene: tuple[FloatArray, list[Interval]], whisper_labels: TrackLabels
) -> None:
    track, _ = scene
    rows = sweep([(track, whisper_labels)], SweepGrid(open_rms=(0.01, 0.5)))
    design = row(rows, 0.01)
    assert design.utterances >= 3 and design.missed == 0 and design.false_onsets == 0
    assert row(rows, 0.5).missed == design.utterances


def test_calibration_json_carries_its_settings() -> None:
    cal = Calibration("r", SETTINGS, SweepGrid(), ("a",), 1, 0, 0.0, 1.0, 0.0)
    data = cal.to_dict()
    assert data["settings"]["no_speech_threshold"] == 0.6
    assert data["grid"]["open_rms"] == list(SweepGrid().open_rms)
    assert cal.design_row() is None


def test_onsets_are_placed_as_scores_place_them_unless_the_window_grid_is_asked_for() -> None:
    # A tone starting between two 20 ms grid points: the window rule puts its onset on the grid,
    # the envelope rule (the scores' default) within a few ms of where it starts.
    start_s, length_s = 1.013, 3.0
    track = np.zeros(round(length_s * SAMPLE_RATE), dtype=np.float32)
    sound = tone(0.5, rms=0.1, rate=SAMPLE_RATE)
    track[round(start_s * SAMPLE_RATE) : round(start_s * SAMPLE_RATE) + len(sound)] = sound
    speech = (Interval(start_s, start_s + 0.5),)
    silence = (Interval(0.0, start_s), Interval(start_s + 0.5, length_s))
    labels = TrackLabels(length_s, speech, silence, speech)
    design = SweepGrid(open_rms=(0.01,), release_ratio=(0.5,), min_s=(0.08,))
    (envelope,) = sweep([(track, labels)], design)
    (window,) = sweep([(track, labels)], design, onset=OnsetRule.WINDOW)
    assert DEFAULT_ONSET is ScoreSettings().onset is OnsetRule.ENVELOPE
    assert window.median_onset_bias_ms is not None and envelope.median_abs_onset_ms is not None
    grid_onset_s = start_s + window.median_onset_bias_ms / 1000
    assert round(grid_onset_s / 0.02, 6) % 1 == 0  # on the 20 ms grid
    assert abs(window.median_onset_bias_ms) >= 7  # 1.013 s is 13 ms past 1.00, 7 ms before 1.02
    assert envelope.median_abs_onset_ms <= 3

    cal = Calibration("r", SETTINGS, design, ("a",), 1, 1, 0.5, 2.5, 0.0, (window,))
    assert cal.onset is DEFAULT_ONSET and cal.to_dict()["onset"] == "envelope"
    asked = replace(cal, onset=OnsetRule.WINDOW)
    assert asked.to_dict()["onset"] == "window"
    assert "(onset rule window, as the paper did)" in calibration_markdown(asked)
    assert "(onset rule envelope, as scores place it)" in calibration_markdown(cal)
