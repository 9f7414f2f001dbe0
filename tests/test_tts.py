import itertools

import numpy as np
import pytest

from pmc.audio import SAMPLE_RATE
from pmc.tts._piper import PITCH_B, _assign, _spoken, synthesize


def test_respelt_words_keep_their_written_owner() -> None:
    text, owner = _spoken(("Oh,", "mm-hm.", "right"))
    assert text == "Oh, hmm hmm. right"
    assert owner == [0, 1, 1, 2]


def test_joined_phoneme_words_are_given_back_to_their_words() -> None:
    # espeak says "how was the trip" as three phoneme-words: "how", "wasthe", "trip".
    assert _assign([3, 5, 4], [3, 3, 2, 4]) == [1, 2, 1]
    assert _assign([2, 2], [2, 2]) == [1, 1]


def test_every_word_is_placed_in_order_inside_the_audio() -> None:
    words = ("Hey,", "you're", "back!", "How", "was", "the", "trip?")
    utterance = synthesize(words)
    spans = utterance.spans
    assert len(spans) == len(words)
    assert all(s < e for s, e in spans)
    assert all(e1 <= s2 for (_, e1), (s2, _) in itertools.pairwise(spans))
    duration = len(utterance.audio) / SAMPLE_RATE
    assert 0 < spans[0][0] < 0.2 and duration - 0.3 < spans[-1][1] < duration
    # Speech energy sits inside the word spans: the 40 ms before the first word is quiet.
    head = utterance.audio[: int(spans[0][0] * SAMPLE_RATE)]
    body = utterance.audio[int(spans[0][0] * SAMPLE_RATE) : int(spans[-1][1] * SAMPLE_RATE)]
    assert np.sqrt(np.mean(head**2)) < 0.1 * np.sqrt(np.mean(body**2))


def test_synthesis_is_deterministic_and_b_is_higher() -> None:
    words = ("The", "water", "was", "freezing.")
    a1, a2 = synthesize(words), synthesize(words)
    np.testing.assert_array_equal(a1.audio, a2.audio)
    b = synthesize(words, pitch=PITCH_B)
    # Same timing, higher pitch: the pitch-shifted voice keeps the duration within 5%.
    assert len(b.audio) == pytest.approx(len(a1.audio), rel=0.05)

    def centroid(x: np.ndarray) -> float:
        spectrum = np.abs(np.fft.rfft(x))
        freqs = np.fft.rfftfreq(len(x), 1 / SAMPLE_RATE)
        return float((spectrum * freqs).sum() / spectrum.sum())

    assert centroid(b.audio) > 1.15 * centroid(a1.audio)
