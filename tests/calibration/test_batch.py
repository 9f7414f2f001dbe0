"""Labelling a run's tracks: the decode cache, and worker processes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import soundfile as sf

from pmc.calibration import LabelSettings, find_tracks, label_tracks
from tests.calibration.conftest import OneWord


def test_cached_decodes_are_reused_until_the_track_or_the_decoding_changes(
    run_dir: Path, tmp_path: Path
) -> None:
    run = tmp_path / "cal"
    shutil.copytree(run_dir / "rollouts", run / "rollouts")
    keys = find_tracks(run)
    fake = OneWord()
    first = label_tracks(run, keys, load=fake.load)
    assert (first.decoded, first.reused) == (4, 0)
    assert [asr for asr, _ in fake.loads] == [LabelSettings().asr] and fake.windows
    fresh = OneWord()
    again = label_tracks(run, keys, load=fresh.load)
    assert (again.decoded, again.reused) == (0, 4)
    assert (fresh.loads, fresh.windows) == ([], [])  # nothing to decode: no model loaded
    assert again.tracks == first.tracks
    assert label_tracks(run, keys, LabelSettings(peak=0.4), load=fake.load).decoded == 4
    played = keys[0].folder(run) / "played.flac"
    audio, rate = sf.read(played, dtype="float32")
    sf.write(played, audio * 0.5, rate, format="FLAC", subtype="PCM_16")
    assert label_tracks(run, keys, LabelSettings(peak=0.4), load=fake.load).decoded == 1


def test_a_cached_decode_sits_beside_the_run_under_calibration_labels(
    run_dir: Path, tmp_path: Path
) -> None:
    run = tmp_path / "cal"
    shutil.copytree(run_dir / "rollouts", run / "rollouts")
    keys = find_tracks(run)
    label_tracks(run, keys[:1], load=OneWord().load)
    key = keys[0]
    path = run / "calibration" / "labels" / key.system / key.point_id / f"{key.rollout}.json"
    assert key.labels_path(run) == path and path.exists()


@pytest.mark.slow
def test_worker_processes_label_as_one_process_does(run_dir: Path, tmp_path: Path) -> None:
    """Two spawned workers, each loading Whisper once, give the labels one process gives."""
    run = tmp_path / "cal"
    shutil.copytree(run_dir / "rollouts", run / "rollouts")
    keys = find_tracks(run)
    parallel = label_tracks(run, keys, workers=2)
    assert parallel.decoded == 4
    shutil.rmtree(run / "calibration")
    assert label_tracks(run, keys, workers=1).tracks == parallel.tracks
