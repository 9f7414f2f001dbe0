"""Gate calibration: windowed Whisper labels, the sweep, the cache, and ``pmc calibrate-gate``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner

from pmc import io
from pmc.asr import TimedWord
from pmc.audio import SAMPLE_RATE, FloatArray
from pmc.cli._calibrate import calibrate_gate_command
from pmc.gate import GateParams, Interval
from pmc.harness import RunSettings, run_rollouts, runs_dir
from pmc.scoring import _calibrate
from pmc.scoring._calibrate import (
    CALIBRATION_SCHEMA_VERSION,
    Calibration,
    CalibrationRow,
    LabelSettings,
    SweepGrid,
    TrackLabels,
    Verdict,
    WindowDecode,
    WindowSegment,
    decode_track,
    find_tracks,
    label_tracks,
    label_windows,
    load_model,
    sweep,
    window_bounds,
)
from pmc.systems import find_card
from pmc.testing.points import write_points
from pmc.tts import VoiceHint, create_tts

SYSTEMS = Path(__file__).resolve().parents[2] / "systems"
SETTINGS = LabelSettings()
HOP = SETTINGS.hop_s

# Where the test track's utterances begin, in seconds: at a window's start, mid-window, and
# just after a window's start.
TEXTS = (
    (1.05, "We drove to the coast with my sister."),
    (5.5, "Did you stay in the blue cottage?"),
    (12.05, "Yes, she brought her dog."),
)
HUM = (8.5, 10.5)
"""A quiet 120 Hz hum with two harmonics (RMS 0.006, under DESIGN's 0.01 open threshold)."""
LENGTH_S = 14.5


def _at(seconds: float) -> int:
    return round(seconds * SAMPLE_RATE)


def _voiced(clip: FloatArray) -> tuple[int, int]:
    """First and last sample above 1% of the clip's peak: where the voice is, by amplitude."""
    loud = np.flatnonzero(np.abs(clip) >= 0.01 * np.max(np.abs(clip)))
    return int(loud[0]), int(loud[-1]) + 1


@pytest.fixture(scope="module")
def scene() -> tuple[FloatArray, list[Interval]]:
    """The test track and where its utterances truly are."""
    track = np.zeros(_at(LENGTH_S), dtype=np.float32)
    truth = []
    tts = create_tts()
    for onset, text in TEXTS:
        clip = tts.speak(text, VoiceHint())
        first, last = _voiced(clip)
        at = _at(onset) - first
        track[at : at + len(clip)] += clip
        truth.append(Interval((at + first) / SAMPLE_RATE, (at + last) / SAMPLE_RATE))
    t = np.arange(_at(HUM[1]) - _at(HUM[0])) / SAMPLE_RATE
    hum = 0.0075 * (np.sin(2 * np.pi * 120 * t) + 0.5 * np.sin(2 * np.pi * 240 * t))
    hum += 0.0075 * 0.25 * np.sin(2 * np.pi * 360 * t)
    track[_at(HUM[0]) : _at(HUM[1])] = hum
    return track, truth


@pytest.fixture(scope="module")
def model() -> Any:
    return load_model(SETTINGS.asr)


@pytest.fixture(scope="module")
def whisper_labels(scene: tuple[FloatArray, list[Interval]], model: Any) -> TrackLabels:
    track, _ = scene
    return label_windows(decode_track(model, track, SETTINGS), len(track), SETTINGS)


def overlaps(a: Interval, b: Interval) -> bool:
    return a.start_s < b.end_s and b.start_s < a.end_s


# --- Windows and the agreement rule, without Whisper ----------------------------------------


def test_windows_tile_the_track_at_the_hop_and_the_last_stops_with_it() -> None:
    s = SAMPLE_RATE
    assert window_bounds(0, SETTINGS) == []
    assert window_bounds(s // 2, SETTINGS) == [(0, s // 2)]
    assert window_bounds(2 * s, SETTINGS) == [(0, 2 * s)]
    assert window_bounds(7 * s // 2, SETTINGS) == [(0, 2 * s), (s, 3 * s), (2 * s, 7 * s // 2)]


def window(
    start: float, *words: tuple[str, float, float], no_speech: float = 0.1, logprob: float = -0.3
) -> WindowDecode:
    timed = tuple(TimedWord(t, a, b, 0.9) for t, a, b in words)
    segments = (WindowSegment(no_speech, logprob, 1.2, timed),) if words else ()
    return WindowDecode(start, start + 2.0, 0.5, segments)


def test_a_window_counts_only_when_all_three_checks_pass_and_it_has_words() -> None:
    word = ("hi", 0.5, 0.9)
    assert window(0.0, word).verdict(SETTINGS) is Verdict.SPEECH
    assert window(0.0).verdict(SETTINGS) is Verdict.NO_SPEECH
    assert window(0.0, (".", 0.5, 0.9)).verdict(SETTINGS) is Verdict.NO_SPEECH
    assert window(0.0, word, no_speech=0.9).verdict(SETTINGS) is Verdict.NO_SPEECH
    assert window(0.0, word, logprob=-1.5).verdict(SETTINGS) is Verdict.UNSURE
    looping = WindowSegment(0.1, -0.3, 3.0, (TimedWord(*word, 0.9),))
    assert WindowDecode(0.0, 2.0, 0.5, (looping,)).verdict(SETTINGS) is Verdict.UNSURE


def spans(intervals: tuple[Interval, ...]) -> list[tuple[float, float]]:
    return [(round(i.start_s, 3), round(i.end_s, 3)) for i in intervals]


def test_an_instant_is_speech_only_where_every_covering_window_agrees() -> None:
    windows = [
        window(0.0, ("hi", 0.5, 1.5)),
        window(1.0, ("hi", 1.0, 1.4)),  # ends the word earlier: [1.4, 1.5) is disputed
        window(2.0, ("Thank", 2.0, 2.5), no_speech=0.9),  # the no-speech head: silence
    ]
    labels = label_windows(windows, 4 * SAMPLE_RATE, SETTINGS)
    assert spans(labels.speech) == [(0.5, 1.4)]
    assert spans(labels.silence) == [(0.0, 0.5), (1.5, 4.0)]
    assert spans(labels.utterances) == [(0.5, 1.4)]
    assert labels.ambiguous_s == pytest.approx(0.1)
    # An unsure window vouches for nothing: what it covers is no longer silence or speech.
    windows[1] = window(1.0, ("hi", 1.0, 1.4), logprob=-1.5)
    labels = label_windows(windows, 4 * SAMPLE_RATE, SETTINGS)
    assert spans(labels.speech) == [(0.5, 1.0)]
    assert spans(labels.silence) == [(0.0, 0.5), (3.0, 4.0)]


def test_short_gaps_join_an_utterance_and_a_pause_splits_it() -> None:
    words = [("a", 0.2, 0.6), ("b", 0.75, 1.2), ("c", 1.7, 1.9)]  # gaps of 0.15 s and 0.5 s
    labels = label_windows([window(0.0, *words)], 2 * SAMPLE_RATE, SETTINGS)
    assert spans(labels.utterances) == [(0.2, 1.2), (1.7, 1.9)]


def test_decodes_round_trip_through_json() -> None:
    w = window(3.0, ("hi", 3.5, 3.9))
    assert WindowDecode.from_dict(json.loads(io.dumps(w.to_dict()))) == w


# --- Whisper on a track with known utterances ------------------------------------------------


def test_windowed_labels_find_every_utterance_and_not_the_hum(
    scene: tuple[FloatArray, list[Interval]], whisper_labels: TrackLabels
) -> None:
    """Each utterance is found, its onset within a hop, the median onset error under 250 ms.

    Whisper's word boundaries err by 50 to 250 ms (DESIGN "Metrics"); 250 ms is that error's
    upper end. The windows add their own: Whisper pins a word that opens its window to the
    window's start (it has no earlier audio to align it to), so where both windows covering an
    onset do that, the label comes out at the later window's start, up to a hop early (measured
    on tiny.en: errors of -f for onsets f seconds into a second). A hop bounds every onset.
    """
    _, truth = scene
    found = whisper_labels.utterances
    errors = []
    for true in truth:
        first = next(u for u in found if overlaps(u, true))
        errors.append(first.start_s - true.start_s)
    assert all(abs(e) < HOP for e in errors), errors
    assert float(np.median(np.abs(errors))) < 0.25, errors
    hum = Interval(*HUM)
    assert not any(overlaps(s, hum) for s in whisper_labels.speech)
    # No speech is invented away from the utterances (a hop's slack for the early bias above).
    near = [Interval(t.start_s - HOP, t.end_s + HOP) for t in truth]
    assert all(any(overlaps(u, n) for n in near) for u in found)


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
    """Onset error against the true onsets: DESIGN's gate within 60 ms (three 20 ms windows)."""
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


# --- A run: cache, resume, the command --------------------------------------------------------


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workdir = tmp_path_factory.mktemp("calibrate-work")
    write_points(workdir)
    run_rollouts(workdir, [find_card("person", SYSTEMS)], RunSettings("cal"))
    return runs_dir(workdir) / "cal"


@pytest.fixture
def fake_whisper(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """No model: every window with sound decodes to one word; returns the call count."""
    calls: list[int] = []

    def transcribe(model: Any, audio: FloatArray) -> list[WindowSegment]:
        calls.append(len(audio))
        return [WindowSegment(0.1, -0.3, 1.2, (TimedWord("word", 0.5, 0.9, 0.9),))]

    monkeypatch.setattr(_calibrate, "load_model", lambda *args: None)
    monkeypatch.setattr(_calibrate, "_transcribe_window", transcribe)
    return calls


def test_cached_decodes_are_reused_until_the_track_or_the_decoding_changes(
    run_dir: Path, tmp_path: Path, fake_whisper: list[int]
) -> None:
    run = tmp_path / "cal"
    shutil.copytree(run_dir / "rollouts", run / "rollouts")
    keys = find_tracks(run)
    first = label_tracks(run, keys)
    assert (first.decoded, first.reused) == (4, 0) and fake_whisper
    fake_whisper.clear()
    again = label_tracks(run, keys)
    assert (again.decoded, again.reused, fake_whisper) == (0, 4, [])
    assert again.tracks == first.tracks
    assert label_tracks(run, keys, LabelSettings(peak=0.4)).decoded == 4
    played = keys[0].folder(run) / "played.flac"
    audio, rate = sf.read(played, dtype="float32")
    sf.write(played, audio * 0.5, rate, format="FLAC", subtype="PCM_16")
    assert label_tracks(run, keys, LabelSettings(peak=0.4)).decoded == 1


def test_calibrate_gate_writes_the_table_and_a_rerun_only_sweeps(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = [str(run_dir), "--workers", "1"]
    first = CliRunner().invoke(calibrate_gate_command, args)
    assert first.exit_code == 0, first.output
    assert "DESIGN" in first.output
    folder = run_dir / "calibration"
    data = io.read_json(folder / "gate.json")
    assert data["schema_version"] == CALIBRATION_SCHEMA_VERSION
    assert (data["tracks"], data["systems"]) == (4, ["person"])
    # The person's two replies and the spoken recall answer; the pause point is silent.
    assert data["utterances"] == 3
    assert len(data["rows"]) == len(SweepGrid().params())
    design = next(r for r in data["rows"] if r["design"])
    assert (design["missed"], design["false_onsets"]) == (0, 0)
    assert (folder / "gate.md").read_text().count("\n| ") == 2 + len(data["rows"])  # heading, rule
    assert (folder / "gate.csv").read_text().count("\n") == 1 + len(data["rows"])
    assert len(list((folder / "labels" / "person").rglob("*.json"))) == 4

    def no_whisper(*_: object) -> list[WindowSegment]:
        raise AssertionError("a rerun transcribed a window")

    monkeypatch.setattr(_calibrate, "_transcribe_window", no_whisper)
    before = (folder / "gate.json").read_bytes()
    second = CliRunner().invoke(calibrate_gate_command, args)
    assert second.exit_code == 0, second.output
    assert "from the cache 4" in second.output
    assert (folder / "gate.json").read_bytes() == before


def test_calibrate_gate_errors_are_one_line(run_dir: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(calibrate_gate_command, [str(tmp_path)])
    assert result.exit_code == 1
    assert result.output.strip().count("\n") == 0 and "not a run" in result.output
    result = CliRunner().invoke(calibrate_gate_command, [str(run_dir), "--system", "nobody"])
    assert result.exit_code == 1
    assert "no rollouts of nobody (systems here: person)" in result.output


def test_calibration_json_carries_its_settings() -> None:
    cal = Calibration("r", SETTINGS, SweepGrid(), ("a",), 1, 0, 0.0, 1.0, 0.0)
    data = cal.to_dict()
    assert data["settings"]["no_speech_threshold"] == 0.6
    assert data["grid"]["open_rms"] == list(SweepGrid().open_rms)
    assert cal.design_row() is None


@pytest.mark.slow
def test_worker_processes_label_as_one_process_does(run_dir: Path, tmp_path: Path) -> None:
    run = tmp_path / "cal"
    shutil.copytree(run_dir / "rollouts", run / "rollouts")
    keys = find_tracks(run)
    parallel = label_tracks(run, keys, workers=2)
    assert parallel.decoded == 4
    shutil.rmtree(run / "calibration")
    assert label_tracks(run, keys, workers=1).tracks == parallel.tracks
