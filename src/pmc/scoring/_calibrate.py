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
carries Whisper's own 50 to 250 ms boundary error (DESIGN "Metrics"). Onset errors in the table
are therefore an upper bound on the gate's; missed utterances do not depend on timing.

Transcription is slow, so each track's window decodes are cached under
``runs/<run>/calibration/labels/<system>/<point>/<k>.json``; a rerun with the same decoding
settings on the same played track only sweeps. Nothing here runs inside a streaming loop.
"""

from __future__ import annotations

import csv
import io as _io
import multiprocessing
import os
from collections.abc import Iterable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, replace
from enum import IntEnum, StrEnum
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from pmc import io
from pmc.asr import DEFAULT_ASR, WHISPER_RATE, FasterWhisper, TimedWord
from pmc.audio import SAMPLE_RATE, FloatArray, resample
from pmc.errors import InputError, PmcError, Problem
from pmc.gate import GateParams, Interval, speech_intervals
from pmc.harness import PLAYED_FILE, TRACE_FILE, read_rollout, rollout_dir
from pmc.progress import Advance, Start

CALIBRATION_SCHEMA_VERSION = 1
LABELS_SCHEMA_VERSION = 1
CALIBRATION_DIR = "calibration"
LABELS_DIR = "labels"
THREADS_PER_WORKER = 2
"""CTranslate2 threads per transcribing process, as :class:`pmc.asr.FasterWhisper` uses."""


class Verdict(StrEnum):
    """What one window says about the instants it covers."""

    SPEECH = "speech"
    """Words that passed every check: their spans are speech, the rest of the window silence."""
    NO_SPEECH = "no_speech"
    """No words, or Whisper's no-speech head fired: the whole window is silence."""
    UNSURE = "unsure"
    """Words with a low log-probability or a repetitive text: the window vouches for nothing."""


class Label(IntEnum):
    """The label of one cell of a track (ints, so a track's cells fit a numpy array)."""

    SILENCE = 0
    SPEECH = 1
    AMBIGUOUS = 2
    """The covering windows disagree or one is unsure; left out of the calibration."""


@dataclass(frozen=True)
class LabelSettings:
    """How played tracks are labelled; the decoding fields key the cached window decodes.

    Attributes:
        asr: The recogniser, ``faster-whisper:MODEL`` (the bundled ``tiny.en`` by default for
            speed; the reference labelled with Whisper base, ``faster-whisper:base``).
        window_s: Window length (appendix D: 2 s windows).
        hop_s: Window hop (appendix D: at a 1 s hop).
        peak: The peak each window is normalised to before decoding (the reference's 0.5,
            notes/reference-implementation.md section 9).
        no_speech_threshold: A window whose no-speech probability exceeds this says no speech.
        log_prob_threshold: A window whose mean token log-probability is below this is unsure.
        compression_ratio_threshold: A window whose text's gzip ratio exceeds this (Whisper's
            repetition guard) is unsure.
        cell_s: Resolution of the labels; the gate's 20 ms window, which is also the 20 ms
            precision of Whisper's timestamps.
        join_s: Speech stretches closer than this make one utterance: Whisper's word boundaries
            err by 50 to 250 ms (DESIGN "Metrics"), so a shorter gap is no evidence of a pause.
    """

    asr: str = DEFAULT_ASR
    window_s: float = 2.0
    hop_s: float = 1.0
    peak: float = 0.5
    # The three checks take faster-whisper 1.2.1's own transcribe() defaults; the reference
    # labeller was stricter on no-speech (0.5) and laxer on log-probability (-1.2).
    no_speech_threshold: float = 0.6
    log_prob_threshold: float = -1.0
    compression_ratio_threshold: float = 2.4
    cell_s: float = GateParams.window_s
    join_s: float = 0.25

    def __post_init__(self) -> None:
        if not self.window_s > 0:
            raise ValueError(f"window_s must be positive, got {self.window_s}")
        if not 0 < self.hop_s <= self.window_s:
            raise ValueError(f"hop_s must be in (0, window_s], got {self.hop_s}")
        if not 0 < self.peak <= 1:
            raise ValueError(f"peak must be in (0, 1], got {self.peak}")
        if not self.cell_s > 0:
            raise ValueError(f"cell_s must be positive, got {self.cell_s}")
        if not self.join_s >= 0:
            raise ValueError(f"join_s must be non-negative, got {self.join_s}")

    def decoding(self) -> dict[str, Any]:
        """What the window decodes depend on; a cached decode with other values is redone."""
        return {
            "asr": self.asr,
            "window_s": self.window_s,
            "hop_s": self.hop_s,
            "peak": self.peak,
            # Fixed, as the reference decoded: greedy at temperature 0, each window on its own.
            "beam_size": 1,
            "temperature": 0.0,
            "condition_on_previous_text": False,
            "language": "en",
        }

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return asdict(self)


@dataclass(frozen=True)
class SweepGrid:
    """The gate settings swept; the bridge and window stay at DESIGN's 40 ms and 20 ms.

    Table 8's body is not in our copy of the paper; appendix D's text compares threshold 0.01
    with 0.05 (and an Otsu split at 3.2e-4), release ratio 0.5 with 0.75, and minimum durations
    of 40 and 80 ms. The defaults are the issue's grid (thresholds 0.005 to 0.02, release ratios
    0.3 to 1, minimum durations 40 to 160 ms) with the paper's 0.05 added and its 0.75 in place
    of 0.7, so every value the paper compares has a row.

    Attributes:
        open_rms: Open thresholds.
        release_ratio: Release ratios.
        min_s: Minimum interval durations, in seconds.
    """

    open_rms: tuple[float, ...] = (0.005, 0.0075, 0.01, 0.015, 0.02, 0.05)
    release_ratio: tuple[float, ...] = (0.3, 0.5, 0.75, 1.0)
    min_s: tuple[float, ...] = (0.04, 0.08, 0.16)

    def params(self, base: GateParams | None = None) -> list[GateParams]:
        """Every combination, threshold slowest, over ``base`` (DESIGN's gate by default)."""
        base = base or GateParams()
        return [
            replace(base, open_rms=o, release_ratio=r, min_s=m)
            for o in self.open_rms
            for r in self.release_ratio
            for m in self.min_s
        ]

    def to_dict(self) -> dict[str, list[float]]:
        """Plain-JSON form."""
        return {k: list(v) for k, v in asdict(self).items()}


@dataclass(frozen=True)
class WindowSegment:
    """One decoded segment of a window, with Whisper's scores; word times on the track clock.

    Attributes:
        no_speech_prob: Whisper's no-speech probability for the decode.
        avg_logprob: Mean token log-probability of the decode.
        compression_ratio: gzip compression ratio of the decoded text (high when repetitive).
        words: The words, times in seconds from the start of the track.
    """

    no_speech_prob: float
    avg_logprob: float
    compression_ratio: float
    words: tuple[TimedWord, ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form; a word is ``[text, start_s, end_s, probability]``."""
        return {
            "no_speech_prob": round(self.no_speech_prob, 6),
            "avg_logprob": round(self.avg_logprob, 6),
            "compression_ratio": round(self.compression_ratio, 6),
            "words": [
                [w.text, round(w.start_s, 3), round(w.end_s, 3), round(w.probability, 4)]
                for w in self.words
            ],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WindowSegment:
        """Inverse of :meth:`to_dict`."""
        return cls(
            float(data["no_speech_prob"]),
            float(data["avg_logprob"]),
            float(data["compression_ratio"]),
            tuple(TimedWord(str(t), float(s), float(e), float(p)) for t, s, e, p in data["words"]),
        )


@dataclass(frozen=True)
class WindowDecode:
    """What Whisper made of one window of a track.

    Attributes:
        start_s: Window start, seconds from the start of the track.
        end_s: Window end (exclusive); the last window stops with the track.
        peak: The window's peak before normalising; 0 is digital silence, never decoded.
        segments: The decoded segments.
    """

    start_s: float
    end_s: float
    peak: float
    segments: tuple[WindowSegment, ...] = ()

    def verdict(self, settings: LabelSettings) -> Verdict:
        """Whether the window's words count, by the checks in ``settings``."""
        voiced = [s for s in self.segments if any(_lexical(w) for w in s.words)]
        if not voiced:
            return Verdict.NO_SPEECH
        if all(s.no_speech_prob > settings.no_speech_threshold for s in voiced):
            return Verdict.NO_SPEECH
        passed = all(
            s.no_speech_prob <= settings.no_speech_threshold
            and s.avg_logprob >= settings.log_prob_threshold
            and s.compression_ratio <= settings.compression_ratio_threshold
            for s in voiced
        )
        return Verdict.SPEECH if passed else Verdict.UNSURE

    def words(self) -> list[TimedWord]:
        """The window's lexical words (punctuation-only tokens dropped), in order."""
        return [w for s in self.segments for w in s.words if _lexical(w)]

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "start_s": round(self.start_s, 6),
            "end_s": round(self.end_s, 6),
            "peak": round(self.peak, 6),
            "segments": [s.to_dict() for s in self.segments],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WindowDecode:
        """Inverse of :meth:`to_dict`."""
        return cls(
            float(data["start_s"]),
            float(data["end_s"]),
            float(data["peak"]),
            tuple(WindowSegment.from_dict(s) for s in data["segments"]),
        )


def _lexical(word: TimedWord) -> bool:
    return any(ch.isalnum() for ch in word.text)


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
        return labels_dir(run_dir) / self.system / self.point_id / f"{self.rollout}.json"


@dataclass(frozen=True)
class LabelledRun:
    """The labels of a run's tracks, and how many were decoded now or taken from the cache.

    Attributes:
        tracks: Every track with its labels, in the order given.
        decoded: Tracks transcribed by this invocation.
        reused: Tracks whose cached decodes were still valid.
    """

    tracks: tuple[tuple[TrackKey, TrackLabels], ...]
    decoded: int
    reused: int


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
        design: Whether this is DESIGN's gate.
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
    schema_version: int = CALIBRATION_SCHEMA_VERSION

    def design_row(self) -> CalibrationRow | None:
        """The row of DESIGN's gate, if the grid holds it."""
        return next((r for r in self.rows if r.design), None)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form, with the schema version."""
        return {
            "schema_version": self.schema_version,
            "run_id": self.run_id,
            "settings": self.settings.to_dict(),
            "grid": self.grid.to_dict(),
            "systems": list(self.systems),
            "tracks": self.tracks,
            "utterances": self.utterances,
            "speech_s": round(self.speech_s, 3),
            "silence_s": round(self.silence_s, 3),
            "ambiguous_s": round(self.ambiguous_s, 3),
            "rows": [r.to_dict() for r in self.rows],
        }


# --- Decoding ------------------------------------------------------------------------------


def load_model(asr: str = DEFAULT_ASR, threads: int = THREADS_PER_WORKER) -> Any:
    """The faster-whisper model an ASR setting names, loaded the way :mod:`pmc.asr` loads it.

    Calibration needs the segment scores (no-speech, log-probability, compression ratio) that
    the :class:`pmc.asr.Transcriber` interface does not carry, so it calls faster-whisper's
    ``WhisperModel`` itself.
    """
    engine, _, model = asr.partition(":")
    if engine != "faster-whisper":
        raise PmcError(
            f"gate calibration needs faster-whisper's segment scores; {asr!r} names another "
            "recogniser"
        )
    # FasterWhisper resolves the bundled names (tiny.en, base), folders and hub names.
    return FasterWhisper(model or "tiny.en", threads=threads)._load()


def window_bounds(samples: int, settings: LabelSettings) -> list[tuple[int, int]]:
    """``[start, end)`` sample indices of the windows tiling a track at :data:`SAMPLE_RATE`.

    Windows start every hop until one reaches the end of the track; the last is cut short
    there, so it is never shorter than a hop (a track under one window is one short window).
    """
    width = round(settings.window_s * SAMPLE_RATE)
    hop = round(settings.hop_s * SAMPLE_RATE)
    bounds = []
    start = 0
    while start < samples:
        bounds.append((start, min(start + width, samples)))
        if start + width >= samples:
            break
        start += hop
    return bounds


def decode_track(model: Any, track: FloatArray, settings: LabelSettings) -> list[WindowDecode]:
    """Decode every window of a played track (mono float32 at :data:`SAMPLE_RATE`).

    A window of digital silence is not decoded (nothing there to normalise); every other one is
    scaled to peak at ``settings.peak`` and decoded on its own.
    """
    decodes = []
    for start, end in window_bounds(len(track), settings):
        piece = track[start:end]
        peak = float(np.max(np.abs(piece))) if piece.size else 0.0
        start_s, end_s = start / SAMPLE_RATE, end / SAMPLE_RATE
        if peak == 0.0:
            decodes.append(WindowDecode(start_s, end_s, 0.0))
            continue
        audio = resample(piece * np.float32(settings.peak / peak), SAMPLE_RATE, WHISPER_RATE)
        segments = tuple(
            WindowSegment(
                s.no_speech_prob,
                s.avg_logprob,
                s.compression_ratio,
                tuple(
                    TimedWord(w.text, w.start_s + start_s, w.end_s + start_s, w.probability)
                    for w in s.words
                ),
            )
            for s in _transcribe_window(model, audio)
        )
        decodes.append(WindowDecode(start_s, end_s, peak, segments))
    return decodes


def _transcribe_window(model: Any, audio: FloatArray) -> list[WindowSegment]:
    """One window through Whisper: greedy at temperature 0, no context, word timestamps.

    faster-whisper's own filters are off (no threshold given): every decode comes back with its
    raw scores, and the checks are applied when labelling, so they can change without decoding
    again. Word times are from the start of ``audio`` (16 kHz).
    """
    segments, _ = model.transcribe(
        audio,
        language="en",
        beam_size=1,
        temperature=0.0,
        condition_on_previous_text=False,
        word_timestamps=True,
        vad_filter=False,
        no_speech_threshold=None,
        log_prob_threshold=None,
        compression_ratio_threshold=None,
    )
    return [
        WindowSegment(
            float(s.no_speech_prob),
            float(s.avg_logprob),
            float(s.compression_ratio),
            tuple(
                TimedWord(w.word.strip(), float(w.start), float(w.end), float(w.probability))
                for w in s.words or []
                if w.word.strip()
            ),
        )
        for s in segments  # a generator: decoding happens here
    ]


# --- Labelling -----------------------------------------------------------------------------


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
        if verdict is Verdict.UNSURE:
            unsure[a:b] += 1
        elif verdict is Verdict.SPEECH:
            said = np.zeros(n, dtype=bool)
            for word in w.words():
                lo, hi = np.searchsorted(centres, [max(word.start_s, w.start_s), word.end_s])
                said[lo:hi] = True
            speech[a:b] += said[a:b]
    labels = np.full(n, Label.AMBIGUOUS, dtype=np.int8)
    covered = cover > 0
    labels[covered & (speech == cover)] = Label.SPEECH
    labels[covered & (speech == 0) & (unsure == 0)] = Label.SILENCE
    runs = {k: _runs(labels == k) for k in Label}
    utterances = _join(
        runs[Label.SPEECH],
        labels,
        round(settings.join_s * SAMPLE_RATE / cell),
        round((settings.window_s - settings.hop_s) * SAMPLE_RATE / cell),
    )
    return TrackLabels(
        duration_s=samples / SAMPLE_RATE,
        speech=_intervals(runs[Label.SPEECH], cell, samples),
        silence=_intervals(runs[Label.SILENCE], cell, samples),
        utterances=_intervals(utterances, cell, samples),
    )


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
        silent = bool(np.any(labels[joined[-1][1] : start] == Label.SILENCE))
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


def label_audio(
    track: FloatArray, settings: LabelSettings = LabelSettings(), model: Any = None
) -> TrackLabels:
    """Decode and label one track in this process (loads the model when none is given)."""
    model = model if model is not None else load_model(settings.asr)
    return label_windows(decode_track(model, track, settings), len(track), settings)


# --- A run's tracks, cached and in parallel ------------------------------------------------


def calibration_dir(run_dir: Path) -> Path:
    """Where a run's calibration is written."""
    return run_dir / CALIBRATION_DIR


def labels_dir(run_dir: Path) -> Path:
    """Where a run's cached window decodes live."""
    return calibration_dir(run_dir) / LABELS_DIR


def find_tracks(
    run_dir: Path, systems: Sequence[str] = (), limit: int | None = None
) -> list[TrackKey]:
    """The finished rollouts of a run (those with a trace), sorted; of ``systems`` if given."""
    root = run_dir / "rollouts"
    if not root.is_dir():
        raise PmcError(f"{run_dir}: not a run (no rollouts/ folder); run `pmc run` first")
    present = sorted(p.name for p in root.iterdir() if p.is_dir())
    unknown = [s for s in systems if s not in present]
    if unknown:
        known = ", ".join(present) or "none"
        raise PmcError(f"{root}: no rollouts of {', '.join(unknown)} (systems here: {known})")
    keys = [
        TrackKey(trace.parents[2].name, trace.parents[1].name, int(trace.parent.name))
        for system in dict.fromkeys(systems or present)
        for trace in (root / system).glob(f"*/*/{TRACE_FILE}")
        if trace.parent.name.isdigit()
    ]
    keys.sort(key=lambda k: (k.system, k.point_id, k.rollout))
    if not keys:
        raise PmcError(f"{root}: no finished rollouts to calibrate on")
    return keys[:limit] if limit is not None else keys


def _read_track(folder: Path) -> FloatArray:
    try:
        _, track = read_rollout(folder)
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise InputError(
            folder, f"unreadable rollout: {exc}", problem=Problem.CORRUPT_AUDIO
        ) from exc
    if track.ndim != 1:
        raise InputError(folder / PLAYED_FILE, f"expected mono audio, got shape {track.shape}")
    return track


def _cached(path: Path, sha: str, settings: LabelSettings) -> _Decoded | None:
    """The cached decodes if they were made from the same track with the same decoding."""
    if not path.exists():
        return None
    try:
        data = io.read_json(path)
        if (
            data.get("schema_version") != LABELS_SCHEMA_VERSION
            or data.get("played_sha256") != sha
            or data.get("decoding") != settings.decoding()
        ):
            return None
        return int(data["samples"]), [WindowDecode.from_dict(w) for w in data["windows"]]
    except (ValueError, KeyError, TypeError):
        return None  # derived data, written atomically; unreadable means decode again


def _store(path: Path, key: TrackKey, sha: str, settings: LabelSettings, decoded: _Decoded) -> None:
    samples, windows = decoded
    io.write_json(
        path,
        {
            "schema_version": LABELS_SCHEMA_VERSION,
            "system": key.system,
            "point_id": key.point_id,
            "rollout": key.rollout,
            "played_sha256": sha,
            "samples": samples,
            "decoding": settings.decoding(),
            "windows": [w.to_dict() for w in windows],
        },
    )


_Decoded = tuple[int, list[WindowDecode]]
"""A track's length in samples and its window decodes."""

_worker_model: Any = None


def _init_worker(asr: str, threads: int) -> None:
    """Load the model once per worker process."""
    global _worker_model
    _worker_model = load_model(asr, threads)


def _decode_job(folder: Path, settings: LabelSettings) -> _Decoded:
    try:
        track = _read_track(folder)
    except InputError as exc:  # its constructor's arguments do not survive pickling
        raise PmcError(str(exc)) from None
    return len(track), decode_track(_worker_model, track, settings)


def label_tracks(
    run_dir: Path,
    keys: Sequence[TrackKey],
    settings: LabelSettings = LabelSettings(),
    workers: int = 1,
    start: Start | None = None,
) -> LabelledRun:
    """Label every track, decoding only those without valid cached decodes.

    Args:
        run_dir: The run's folder.
        keys: The tracks.
        settings: How to label.
        workers: Transcribing processes, each loading the model once; 1 decodes in this process.
        start: Progress hook, called with the number of tracks.
    """
    if workers < 1:
        raise PmcError(f"workers must be at least 1, got {workers}")
    advance = start(len(keys)) if start else (lambda: None)
    found: dict[TrackKey, _Decoded] = {}
    todo: list[tuple[TrackKey, str]] = []
    for key in keys:
        played = key.folder(run_dir) / PLAYED_FILE
        if not played.exists():
            raise InputError(
                played, "missing, though the rollout has a trace", problem=Problem.MISSING_FILE
            )
        sha = io.sha256_file(played)
        cached = _cached(key.labels_path(run_dir), sha, settings)
        if cached is None:
            todo.append((key, sha))
        else:
            found[key] = cached
            advance()

    def keep(key: TrackKey, sha: str, decoded: _Decoded) -> None:
        _store(key.labels_path(run_dir), key, sha, settings, decoded)
        found[key] = decoded
        advance()

    cores = os.cpu_count() or 1
    if todo and workers == 1:
        model = load_model(settings.asr, cores)
        for key, sha in todo:
            track = _read_track(key.folder(run_dir))
            keep(key, sha, (len(track), decode_track(model, track, settings)))
    elif todo:
        with _pool(min(workers, len(todo)), settings.asr, max(1, cores // workers)) as pool:
            futures = {
                pool.submit(_decode_job, key.folder(run_dir), settings): (key, sha)
                for key, sha in todo
            }
            for future in as_completed(futures):
                keep(*futures[future], future.result())
    tracks = tuple((key, label_windows(found[key][1], found[key][0], settings)) for key in keys)
    return LabelledRun(tracks, decoded=len(todo), reused=len(keys) - len(todo))


def _pool(workers: int, asr: str, threads: int) -> Executor:
    # Spawned, not forked: the parent may hold threads (progress bar, CTranslate2) that a
    # fork would copy mid-operation.
    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_init_worker,
        initargs=(asr, threads),
    )


# --- The sweep -----------------------------------------------------------------------------


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
    grid: SweepGrid = SweepGrid(),
    advance: Advance | None = None,
) -> list[CalibrationRow]:
    """Run every gate setting of ``grid`` over the tracks and score it against the labels.

    Args:
        tracks: Played tracks (mono, :data:`SAMPLE_RATE`) with their labels; read one at a time.
        grid: The settings to try.
        advance: Called after each track.
    """
    params = grid.params()
    tallies = [_Tally() for _ in params]
    for audio, labels in tracks:
        for p, tally in zip(params, tallies, strict=True):
            _score(speech_intervals(audio, p), labels, tally)
        if advance:
            advance()
    return [_row(p, t) for p, t in zip(params, tallies, strict=True)]


def calibrate(
    run_dir: Path,
    labelled: LabelledRun,
    settings: LabelSettings = LabelSettings(),
    grid: SweepGrid = SweepGrid(),
    start: Start | None = None,
) -> Calibration:
    """Sweep the gate over a run's labelled tracks (Table 8's analog)."""
    advance = start(len(labelled.tracks)) if start else None
    tracks = ((_read_track(key.folder(run_dir)), labels) for key, labels in labelled.tracks)
    rows = sweep(tracks, grid, advance)
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
    )


# --- Reports -------------------------------------------------------------------------------

TABLE_COLUMNS = (
    "open",
    "release",
    "min (ms)",
    "matched",
    "missed",
    "false onsets",
    "median abs error (ms)",
    "p90 abs error (ms)",
    "mean abs error (ms)",
    "median bias (ms)",
    "",
)
"""Headings of the calibration table: the gate's settings, then how it did; the last column
marks DESIGN's gate."""


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def row_cells(row: CalibrationRow) -> list[str]:
    """A row as the table's cells (:data:`TABLE_COLUMNS`); the last marks DESIGN's gate."""
    return [
        f"{row.gate.open_rms:g}",
        f"{row.gate.release_ratio:g}",
        f"{row.gate.min_s * 1000:g}",
        f"{row.matched}/{row.utterances}",
        str(row.missed),
        str(row.false_onsets),
        _cell(row.median_abs_onset_ms),
        _cell(row.p90_abs_onset_ms),
        _cell(row.mean_abs_onset_ms),
        _cell(row.median_onset_bias_ms),
        "DESIGN" if row.design else "",
    ]


def calibration_markdown(cal: Calibration) -> str:
    """The sweep as a Markdown table, under a line saying what it was computed on."""
    s = cal.settings
    lines = [
        f"# Gate calibration of {cal.run_id}",
        "",
        f"{cal.tracks} tracks of {', '.join(cal.systems)}; {cal.utterances} reference "
        f"utterances; labelled speech {cal.speech_s:.1f} s, silence {cal.silence_s:.1f} s, "
        f"ambiguous {cal.ambiguous_s:.1f} s. Labeller: {s.asr}, {s.window_s:g} s windows at a "
        f"{s.hop_s:g} s hop, peak {s.peak:g}, no-speech <= {s.no_speech_threshold:g}, "
        f"log-probability >= {s.log_prob_threshold:g}, compression <= "
        f"{s.compression_ratio_threshold:g}. Onset error = gate onset - reference onset.",
        "",
        "| " + " | ".join(TABLE_COLUMNS) + " |",
        "| " + " | ".join("---:" for _ in TABLE_COLUMNS) + " |",
    ]
    lines += ["| " + " | ".join(row_cells(r)) + " |" for r in cal.rows]
    return "\n".join(lines) + "\n"


def calibration_csv(cal: Calibration) -> str:
    """One CSV row per gate setting."""
    buffer = _io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    names = [
        "open_rms",
        "release_ratio",
        "min_s",
        "bridge_s",
        "window_s",
        "utterances",
        "matched",
        "missed",
        "false_onsets",
        "median_abs_onset_ms",
        "p90_abs_onset_ms",
        "mean_abs_onset_ms",
        "median_onset_bias_ms",
        "design",
    ]
    writer.writerow(names)
    for r in cal.rows:
        flat = {**r.gate.to_dict(), **r.to_dict()}
        writer.writerow(["" if flat[n] is None else flat[n] for n in names])
    return buffer.getvalue()


def write_calibration(run_dir: Path, cal: Calibration) -> list[Path]:
    """Write ``gate.json``, ``gate.md`` and ``gate.csv`` into the run's calibration folder."""
    folder = calibration_dir(run_dir)
    paths = [folder / "gate.json", folder / "gate.md", folder / "gate.csv"]
    io.write_json(paths[0], cal.to_dict())
    io.write_text(paths[1], calibration_markdown(cal))
    io.write_text(paths[2], calibration_csv(cal))
    return paths
