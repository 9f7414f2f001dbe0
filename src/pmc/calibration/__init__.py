"""Gate calibration (paper appendix D, Table 8): Whisper labels the played audio, the gate is swept.

The energy gate (:mod:`pmc.gate`) decides where a system's output is speech. Its settings are
checked here against a label source that owes nothing to an energy threshold: Whisper's words on
the systems' own played tracks. Each track is tiled with 2 s windows at a 1 s hop, every window
is peak-normalised before decoding (so the labels cannot inherit the level bias being measured),
and an instant is speech only when every window covering it puts a word there that passed
Whisper's no-speech, log-probability and repetition checks. Then every combination of open
threshold, release ratio and minimum duration is run over the same tracks and scored on onset
error and missed utterances (a missed utterance turns a takeover into a hold, the error that
matters most).

What the labels can time: Whisper aligns a word that opens its window to the window's start
(there is no earlier audio to place it against), so where both windows covering an onset do
that, the labelled onset lands on the later window's start, up to a hop early; elsewhere it
carries Whisper's own 50 to 250 ms boundary error (docs/architecture.md "Metrics"). Onset errors in
the table are therefore an upper bound on the gate's; missed utterances do not depend on timing.

Transcription is slow, so each track's window decodes are cached under
``runs/<run>/calibration/labels/<system>/<point>/<k>.json``; a rerun with the same decoding
settings on the same played track only sweeps. Nothing here runs inside a streaming loop.

Modules: settings (``_settings``), one window's decode (``_windows``), windowed decoding behind
the :class:`WindowDecoder` protocol (``_decode``), labels from decodes (``_label``), a run's
tracks (``_tracks``), the decode cache (``_cache``), labelling a run (``_batch``), the sweep
(``_sweep``, ``_result``) and the files (``_write``). It sits beside :mod:`pmc.scoring`, after
the harness, whose rollouts it reads.
"""

from pmc.calibration._batch import LabelledRun, label_tracks
from pmc.calibration._cache import WINDOW_LABELS_SCHEMA_VERSION
from pmc.calibration._decode import (
    THREADS_PER_WORKER,
    WhisperWindowDecoder,
    WindowDecoder,
    decode_track,
    load_decoder,
    window_bounds,
)
from pmc.calibration._label import CellLabel, TrackLabels, label_audio, label_windows
from pmc.calibration._result import CALIBRATION_SCHEMA_VERSION, Calibration, CalibrationRow
from pmc.calibration._settings import LabelSettings, SweepGrid
from pmc.calibration._sweep import calibrate, sweep
from pmc.calibration._tracks import (
    find_tracks,
)
from pmc.calibration._windows import WindowDecode, WindowSegment, WindowVerdict
from pmc.calibration._write import (
    calibration_csv,
    calibration_markdown,
    write_calibration,
)

__all__ = [
    "CALIBRATION_SCHEMA_VERSION",
    "THREADS_PER_WORKER",
    "WINDOW_LABELS_SCHEMA_VERSION",
    "Calibration",
    "CalibrationRow",
    "CellLabel",
    "LabelSettings",
    "LabelledRun",
    "SweepGrid",
    "TrackLabels",
    "WhisperWindowDecoder",
    "WindowDecode",
    "WindowDecoder",
    "WindowSegment",
    "WindowVerdict",
    "calibrate",
    "calibration_csv",
    "calibration_markdown",
    "decode_track",
    "find_tracks",
    "label_audio",
    "label_tracks",
    "label_windows",
    "load_decoder",
    "sweep",
    "window_bounds",
    "write_calibration",
]
