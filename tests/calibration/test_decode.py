"""Windowed decoding: the tiling, peak normalisation, digital silence, the Whisper loader."""

from __future__ import annotations

import numpy as np
import pytest

from pmc.audio import SAMPLE_RATE
from pmc.calibration import decode_track, load_decoder, window_bounds
from pmc.errors import PmcError
from tests.calibration.conftest import SETTINGS, OneWord, at


def test_windows_tile_the_track_at_the_hop_and_the_last_stops_with_it() -> None:
    s = SAMPLE_RATE
    assert window_bounds(0, SETTINGS) == []
    assert window_bounds(s // 2, SETTINGS) == [(0, s // 2)]
    assert window_bounds(2 * s, SETTINGS) == [(0, 2 * s)]
    assert window_bounds(7 * s // 2, SETTINGS) == [(0, 2 * s), (s, 3 * s), (2 * s, 7 * s // 2)]


def test_each_window_is_normalised_on_its_own_and_digital_silence_is_not_decoded() -> None:
    track = np.zeros(at(5.0), dtype=np.float32)
    t = np.arange(at(0.5)) / SAMPLE_RATE
    track[at(2.5) : at(3.0)] = 0.1 * np.sin(2 * np.pi * 200 * t)  # in windows [1, 3) and [2, 4)
    fake = OneWord()
    decodes = decode_track(fake, track, SETTINGS)
    assert [(d.start_s, d.end_s) for d in decodes] == [(0, 2), (1, 3), (2, 4), (3, 5)]
    assert [round(d.peak, 4) for d in decodes] == [0.0, 0.1, 0.1, 0.0]
    assert [len(d.segments) for d in decodes] == [0, 1, 1, 0]
    assert len(fake.windows) == 2
    for audio in fake.windows:
        assert len(audio) == at(2.0)
        assert float(np.max(np.abs(audio))) == pytest.approx(SETTINGS.peak, rel=1e-6)
    # Word times come back on the track's clock: the window's start added.
    words = [(w.start_s, w.end_s) for d in decodes for w in d.words()]
    assert words == [(1.5, 1.9), (2.5, 2.9)]


def test_the_loader_refuses_a_recogniser_without_segment_scores() -> None:
    with pytest.raises(PmcError, match="needs faster-whisper's segment scores"):
        load_decoder("openai:whisper-1")
