"""The calibration's files: gate.md and gate.csv byte for byte, and where they go."""

from __future__ import annotations

from pathlib import Path

from pmc import io
from pmc.calibration import (
    Calibration,
    CalibrationRow,
    LabelSettings,
    SweepGrid,
    calibration_csv,
    calibration_markdown,
    write_calibration,
)
from pmc.gate import GateParams

CAL = Calibration(
    "run-1",
    LabelSettings(),
    SweepGrid(),
    ("a", "b"),
    2,
    3,
    4.25,
    10.5,
    0.25,
    (
        CalibrationRow(GateParams(), 3, 0, 1, 12.5, 40.0, 20.3, -10.0, design=True),
        CalibrationRow(GateParams(open_rms=0.5, min_s=0.16), 3, 3, 0, None, None, None, None),
    ),
)

MARKDOWN = """\
# Gate calibration of run-1

2 tracks of a, b; 3 reference utterances; labelled speech 4.2 s, silence 10.5 s, ambiguous \
0.2 s. Labeller: faster-whisper:tiny.en, 2 s windows at a 1 s hop, peak 0.5, no-speech <= 0.6, \
log-probability >= -1, compression <= 2.4. Onset error = gate onset - reference onset; a gate \
onset is the first sample of its speech (onset rule envelope, as scores place it).

| open | release | min (ms) | matched | missed | false onsets | median abs error (ms) \
| p90 abs error (ms) | mean abs error (ms) | median bias (ms) |  |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| 0.01 | 0.5 | 80 | 3/3 | 0 | 1 | 12.5 | 40 | 20.3 | -10 | DESIGN |
| 0.5 | 0.5 | 160 | 0/3 | 3 | 0 | - | - | - | - |  |
"""

CSV = """\
open_rms,release_ratio,min_s,bridge_s,window_s,utterances,matched,missed,false_onsets,\
median_abs_onset_ms,p90_abs_onset_ms,mean_abs_onset_ms,median_onset_bias_ms,design
0.01,0.5,0.08,0.04,0.02,3,3,0,1,12.5,40.0,20.3,-10.0,True
0.5,0.5,0.16,0.04,0.02,3,0,3,0,,,,,False
"""


def test_the_markdown_table_right_aligns_and_marks_the_design_gate() -> None:
    assert calibration_markdown(CAL) == MARKDOWN


def test_the_csv_holds_unrounded_values_and_empty_cells_for_none() -> None:
    assert calibration_csv(CAL) == CSV


def test_the_three_files_go_into_the_runs_calibration_folder(tmp_path: Path) -> None:
    paths = write_calibration(tmp_path, CAL)
    folder = tmp_path / "calibration"
    assert paths == [folder / "gate.json", folder / "gate.md", folder / "gate.csv"]
    assert paths[0].read_text() == io.dumps(CAL.to_dict())
    assert paths[1].read_text() == MARKDOWN and paths[2].read_text() == CSV
