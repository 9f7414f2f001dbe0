"""The recogniser finds a 30 s window it has encoded before, and its words do not change."""

from __future__ import annotations

import numpy as np

from pmc.asr import FasterWhisper
from pmc.audio import SAMPLE_RATE
from pmc.testing.speech import spoken

TEXT = (
    "We walked down to the harbour early, before the boats went out, and watched the gulls "
    "fight over what the fishermen threw back into the water."
)


def test_a_window_encoded_before_is_found_and_the_words_are_the_same() -> None:
    # As a system's tracks at two points: the same speech from the start, then more silence in
    # one. (Whisper sets each track's quietest level from its loudest frame, so windows of two
    # tracks are the same only where that frame is in both.)
    shorter = np.tile(spoken(TEXT), 8)[: 32 * SAMPLE_RATE]
    longer = np.concatenate([shorter, np.zeros(4 * SAMPLE_RATE, dtype=np.float32)])
    remembering = FasterWhisper(threads=1)
    remembering.transcribe(shorter)
    model = remembering._load()
    made = model.windows_encoded
    assert made >= 2 and model.windows_found == 0

    again = remembering.transcribe(longer)

    assert model.windows_found >= 1  # the first window at least: the same audio, the same features
    assert model.windows_encoded + model.windows_found - made >= 2
    fresh = FasterWhisper(threads=1).transcribe(longer)
    assert again == fresh
    assert len(fresh) > 60
