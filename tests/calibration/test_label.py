"""Labels from window decodes: the three checks, the agreement rule, Whisper on a known track."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pmc import io
from pmc.asr import TimedWord
from pmc.audio import SAMPLE_RATE, FloatArray
from pmc.calibration import (
    TrackLabels,
    WindowDecode,
    WindowSegment,
    WindowVerdict,
    label_audio,
    label_windows,
)
from pmc.gate import Interval
from tests.calibration.conftest import HOP, HUM, SETTINGS, OneWord, overlaps, spans, window

# --- Windows and the agreement rule, without Whisper ----------------------------------------


def test_a_window_counts_only_when_all_three_checks_pass_and_it_has_words() -> None:
    word = ("hi", 0.5, 0.9)
    assert window(0.0, word).verdict(SETTINGS) is WindowVerdict.SPEECH
    assert window(0.0).verdict(SETTINGS) is WindowVerdict.NO_SPEECH
    assert window(0.0, (".", 0.5, 0.9)).verdict(SETTINGS) is WindowVerdict.NO_SPEECH
    assert window(0.0, word, no_speech=0.9).verdict(SETTINGS) is WindowVerdict.NO_SPEECH
    assert window(0.0, word, logprob=-1.5).verdict(SETTINGS) is WindowVerdict.UNSURE
    looping = WindowSegment(0.1, -0.3, 3.0, (TimedWord(*word, 0.9),))
    assert WindowDecode(0.0, 2.0, 0.5, (looping,)).verdict(SETTINGS) is WindowVerdict.UNSURE


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


def test_one_track_is_labelled_with_the_decoder_given() -> None:
    """Each window of a 3 s tone says a word 0.5 to 0.9 s in; speech needs every covering one."""
    t = np.arange(3 * SAMPLE_RATE) / SAMPLE_RATE
    track = (0.2 * np.sin(2 * np.pi * 200 * t)).astype(np.float32)
    fake = OneWord()
    labels = label_audio(track, SETTINGS, fake)
    assert len(fake.windows) == 2  # [0, 2) and [1, 3)
    # [0.5, 0.9) is said only by the first window, the only one covering it: speech. [1.5, 1.9)
    # is said by the second but not the first, which covers it too: ambiguous.
    assert spans(labels.speech) == [(0.5, 0.9)]
    assert spans(labels.silence) == [(0.0, 0.5), (0.9, 1.5), (1.9, 3.0)]
    assert labels.ambiguous_s == pytest.approx(0.4)


# --- Whisper on a track with known utterances ------------------------------------------------


def test_windowed_labels_find_every_utterance_and_not_the_hum(
    scene: tuple[FloatArray, list[Interval]], whisper_labels: TrackLabels
) -> None:
    """Each utterance is found, its onset within a hop, the median onset error under 250 ms.

    Whisper's word boundaries err by 50 to 250 ms (docs/architecture.md "Metrics"); 250 ms is that
    error's upper end. The windows add their own: Whisper pins a word that opens its window to the
    window's start (it has no earlier audio to align it to), so where both windows covering an onset
    do that, the label comes out at the later window's start, up to a hop early (measured on
    tiny.en: errors of -f for onsets f seconds into a second). A hop bounds every onset.
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
