"""Shared scene for the calibration tests: a track with known utterances, a run, a fake decoder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pmc.asr import TimedWord
from pmc.audio import SAMPLE_RATE, FloatArray
from pmc.calibration import (
    LabelSettings,
    TrackLabels,
    WhisperWindowDecoder,
    WindowDecode,
    WindowSegment,
    decode_track,
    label_windows,
    load_decoder,
)
from pmc.gate import Interval
from pmc.harness import RunSettings, run_rollouts, runs_dir
from pmc.systems import bundled_cards, find_card
from pmc.testing.points import write_points
from pmc.testing.speech import spoken

SYSTEMS = bundled_cards()
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
"""A quiet 120 Hz hum with two harmonics (RMS 0.006, under the default gate's 0.01 open
threshold)."""
LENGTH_S = 14.5


def at(seconds: float) -> int:
    return round(seconds * SAMPLE_RATE)


def overlaps(a: Interval, b: Interval) -> bool:
    return a.start_s < b.end_s and b.start_s < a.end_s


def spans(intervals: tuple[Interval, ...]) -> list[tuple[float, float]]:
    return [(round(i.start_s, 3), round(i.end_s, 3)) for i in intervals]


def window(
    start: float, *words: tuple[str, float, float], no_speech: float = 0.1, logprob: float = -0.3
) -> WindowDecode:
    """A 2 s window's decode with the given words (times on the track clock) and scores."""
    timed = tuple(TimedWord(t, a, b, 0.9) for t, a, b in words)
    segments = (WindowSegment(no_speech, logprob, 1.2, timed),) if words else ()
    return WindowDecode(start, start + 2.0, 0.5, segments)


class OneWord:
    """A decoder without a model: every window decodes to one word, 0.5 to 0.9 s into it."""

    def __init__(self) -> None:
        self.windows: list[FloatArray] = []
        """The audio of every window decoded, in order."""
        self.loads: list[tuple[str, int]] = []
        """``(asr, threads)`` of every :meth:`load`."""

    def decode(self, audio: FloatArray) -> list[WindowSegment]:
        self.windows.append(audio)
        return [WindowSegment(0.1, -0.3, 1.2, (TimedWord("word", 0.5, 0.9, 0.9),))]

    def load(self, asr: str, threads: int) -> OneWord:
        self.loads.append((asr, threads))
        return self


def _voiced(clip: FloatArray) -> tuple[int, int]:
    """First and last sample above 1% of the clip's peak: where the voice is, by amplitude."""
    loud = np.flatnonzero(np.abs(clip) >= 0.01 * np.max(np.abs(clip)))
    return int(loud[0]), int(loud[-1]) + 1


@pytest.fixture(scope="session")
def scene() -> tuple[FloatArray, list[Interval]]:
    """The test track and where its utterances truly are."""
    track = np.zeros(at(LENGTH_S), dtype=np.float32)
    truth = []
    for onset, text in TEXTS:
        clip = spoken(text)
        first, last = _voiced(clip)
        start = at(onset) - first
        track[start : start + len(clip)] += clip
        truth.append(Interval((start + first) / SAMPLE_RATE, (start + last) / SAMPLE_RATE))
    t = np.arange(at(HUM[1]) - at(HUM[0])) / SAMPLE_RATE
    hum = 0.0075 * (np.sin(2 * np.pi * 120 * t) + 0.5 * np.sin(2 * np.pi * 240 * t))
    hum += 0.0075 * 0.25 * np.sin(2 * np.pi * 360 * t)
    track[at(HUM[0]) : at(HUM[1])] = hum
    return track, truth


@pytest.fixture(scope="session")
def whisper() -> WhisperWindowDecoder:
    """The real decoder, Whisper tiny.en."""
    return load_decoder(SETTINGS.asr)


@pytest.fixture(scope="session")
def whisper_labels(
    scene: tuple[FloatArray, list[Interval]], whisper: WhisperWindowDecoder
) -> TrackLabels:
    track, _ = scene
    return label_windows(decode_track(whisper, track, SETTINGS), len(track), SETTINGS)


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of the ``person`` system over the test points: four finished rollouts."""
    workdir = tmp_path_factory.mktemp("calibrate-work")
    write_points(workdir)
    run_rollouts(workdir, [find_card("person", SYSTEMS)], RunSettings("cal"))
    return runs_dir(workdir) / "cal"
