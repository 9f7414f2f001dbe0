"""What the sweep found: one row per gate setting, and the calibration of a run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pmc.calibration._settings import LabelSettings, SweepGrid
from pmc.gate import DEFAULT_ONSET, GateParams, OnsetRule

CALIBRATION_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class CalibrationRow:
    """One gate setting scored against the labels (a row of Table 8).

    An utterance's gate onset is the start of the earliest gate interval overlapping it, so a
    gate that runs on from an earlier utterance reports a large early error there.

    Attributes:
        gate: The gate's settings.
        utterances: Reference utterances over all tracks.
        missed: Utterances no gate interval overlaps.
        false_onsets: Gate intervals that overlap no utterance but do overlap labelled silence.
        median_abs_onset_ms: Median |gate onset - reference onset| over matched utterances.
        p90_abs_onset_ms: 90th percentile of the same.
        mean_abs_onset_ms: Mean of the same (the paper quotes mean absolute error).
        median_onset_bias_ms: Median signed error; negative means the gate opens early.
        design: Whether this is the default gate.
    """

    gate: GateParams
    utterances: int
    missed: int
    false_onsets: int
    median_abs_onset_ms: float | None
    p90_abs_onset_ms: float | None
    mean_abs_onset_ms: float | None
    median_onset_bias_ms: float | None
    design: bool = False

    @property
    def matched(self) -> int:
        """Utterances some gate interval overlaps."""
        return self.utterances - self.missed

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "gate": self.gate.to_dict(),
            "utterances": self.utterances,
            "matched": self.matched,
            "missed": self.missed,
            "false_onsets": self.false_onsets,
            "median_abs_onset_ms": self.median_abs_onset_ms,
            "p90_abs_onset_ms": self.p90_abs_onset_ms,
            "mean_abs_onset_ms": self.mean_abs_onset_ms,
            "median_onset_bias_ms": self.median_onset_bias_ms,
            "design": self.design,
        }


@dataclass(frozen=True)
class Calibration:
    """The sweep over a run's played tracks (the analog of Table 8).

    Attributes:
        run_id: The run's folder name.
        settings: How the tracks were labelled.
        grid: The gate settings swept.
        systems: The systems whose tracks were used.
        tracks: Tracks used.
        utterances: Reference utterances found in them.
        speech_s: Seconds labelled speech.
        silence_s: Seconds labelled silence.
        ambiguous_s: Seconds left out (windows disagree or unsure).
        rows: One per gate setting, in the grid's order.
        onset: Where gate onsets were placed (scores' default rule, or the paper's window grid).
    """

    run_id: str
    settings: LabelSettings
    grid: SweepGrid
    systems: tuple[str, ...]
    tracks: int
    utterances: int
    speech_s: float
    silence_s: float
    ambiguous_s: float
    rows: tuple[CalibrationRow, ...] = field(default_factory=tuple)
    onset: OnsetRule = DEFAULT_ONSET
    schema_version: int = CALIBRATION_SCHEMA_VERSION

    def design_row(self) -> CalibrationRow | None:
        """The row of the default gate, if the grid holds it."""
        return next((r for r in self.rows if r.design), None)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form, with the schema version."""
        return {
            "schema_version": self.schema_version,
            "run_id": self.run_id,
            "settings": self.settings.to_dict(),
            "grid": self.grid.to_dict(),
            "onset": self.onset.value,
            "systems": list(self.systems),
            "tracks": self.tracks,
            "utterances": self.utterances,
            "speech_s": round(self.speech_s, 3),
            "silence_s": round(self.silence_s, 3),
            "ambiguous_s": round(self.ambiguous_s, 3),
            "rows": [r.to_dict() for r in self.rows],
        }
