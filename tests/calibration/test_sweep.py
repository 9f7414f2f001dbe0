"""The sweep: the default gate against exact and Whisper labels, and what a calibration records."""

from __future__ import annotations

from pmc.audio import FloatArray
from pmc.calibration import Calibration, CalibrationRow, SweepGrid, TrackLabels, sweep
from pmc.gate import GateParams, Interval
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
