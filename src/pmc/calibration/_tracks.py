"""Where a run's calibration lives, and which of its played tracks there are to calibrate on."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pmc.audio import FloatArray
from pmc.errors import InputError, PmcError, Problem
from pmc.harness import PLAYED_FILE, RolloutState, Run, read_rollout, rollout_dir

CALIBRATION_DIR = "calibration"
WINDOW_LABELS_DIR = "labels"
"""Inside :data:`CALIBRATION_DIR`: the cached window decodes, one file per track."""


def calibration_dir(run_dir: Path) -> Path:
    """Where a run's calibration is written."""
    return run_dir / CALIBRATION_DIR


def window_labels_dir(run_dir: Path) -> Path:
    """Where a run's cached window decodes live."""
    return calibration_dir(run_dir) / WINDOW_LABELS_DIR


@dataclass(frozen=True)
class TrackKey:
    """One rollout's played track in a run."""

    system: str
    point_id: str
    rollout: int

    def folder(self, run_dir: Path) -> Path:
        """The rollout's folder."""
        return rollout_dir(run_dir, self.system, self.point_id, self.rollout)

    def labels_path(self, run_dir: Path) -> Path:
        """Where the track's window decodes are cached."""
        return window_labels_dir(run_dir) / self.system / self.point_id / f"{self.rollout}.json"


def find_tracks(
    run_dir: Path, systems: Sequence[str] = (), limit: int | None = None
) -> list[TrackKey]:
    """The finished rollouts of a run (those with a trace), sorted; of ``systems`` if given."""
    run = Run(run_dir)
    if not run.rollouts_dir.is_dir():
        raise PmcError(f"{run_dir}: not a run (no rollouts/ folder); run `pmc run` first")
    present = run.systems_with_rollouts()
    unknown = [s for s in systems if s not in present]
    if unknown:
        known = ", ".join(present) or "none"
        raise PmcError(
            f"{run.rollouts_dir}: no rollouts of {', '.join(unknown)} (systems here: {known})"
        )
    keys = [
        TrackKey(entry.system, entry.point_id, entry.rollout)
        for entry in run.rollouts(dict.fromkeys(systems or present), (RolloutState.DONE,))
    ]
    keys.sort(key=lambda k: (k.system, k.point_id, k.rollout))
    if not keys:
        raise PmcError(f"{run.rollouts_dir}: no finished rollouts to calibrate on")
    return keys[:limit] if limit is not None else keys


def read_track(folder: Path) -> FloatArray:
    """A rollout's played track, mono at :data:`pmc.audio.SAMPLE_RATE`."""
    try:
        _, track = read_rollout(folder)
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise InputError(
            folder, f"unreadable rollout: {exc}", problem=Problem.CORRUPT_AUDIO
        ) from exc
    if track.ndim != 1:
        raise InputError(folder / PLAYED_FILE, f"expected mono audio, got shape {track.shape}")
    return track
