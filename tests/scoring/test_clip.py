"""What a system did when the person's clip came over its reply: yield, stop latency, talk over."""

import numpy as np
import pytest

from pmc.gate import GateParams, OnsetRule, speech_intervals
from pmc.scoring import ClipScore
from pmc.scoring._evidence import Evidence
from pmc.scoring._talkover import YIELD_WINDOW_S, clip_score
from pmc.testing.systems import tone

RATE = 24_000
GATE = GateParams()


def track(*spans: tuple[float, float], length_s: float = 8.0) -> np.ndarray:
    """Tones over the given stream spans, cut to the sample."""
    out = np.zeros(round(length_s * RATE), dtype=np.float32)
    for a, b in spans:
        piece = tone(b - a, 0.1)
        out[round(a * RATE) : round(a * RATE) + len(piece)] = piece
    return out


def score(samples: np.ndarray, onset_s: float | None = 3.0, clip_s: float = 1.0) -> ClipScore:
    found = [
        Evidence(i.start_s, i.end_s, (), None)
        for i in speech_intervals(samples, GATE, RATE, OnsetRule.ENVELOPE)
    ]
    return clip_score(found, onset_s, clip_s, samples, GATE, person_s=0.4)


@pytest.mark.parametrize("stop_s", [3.137, 3.3005, 4.2119])
def test_the_stop_latency_is_the_end_of_its_speech_to_the_sample(stop_s: float) -> None:
    clip = score(track((2.0, stop_s)))
    assert clip.reached and clip.talking
    assert clip.stop_latency_s == pytest.approx(stop_s - 3.0, abs=0.001)
    assert clip.yielded is (stop_s - 3.0 <= YIELD_WINDOW_S)
    assert clip.talk_over_s == pytest.approx(min(stop_s, 4.0) - 3.0, abs=0.001)
    assert clip.person_s == 0.4


def test_talk_that_goes_on_past_the_window_is_no_yield() -> None:
    clip = score(track((2.0, 5.5)))
    assert clip.stop_latency_s == pytest.approx(2.5, abs=0.001)
    assert not clip.yielded
    assert clip.talk_over_s == pytest.approx(1.0, abs=0.001)  # the whole clip


def test_a_breath_is_not_a_stop_and_talk_after_a_second_is_speaking_again() -> None:
    breath = score(track((2.0, 3.2), (3.6, 4.5)))
    assert breath.stop_latency_s == pytest.approx(1.5, abs=0.001)
    again = score(track((2.0, 3.2), (4.8, 5.5)))
    assert again.stop_latency_s == pytest.approx(0.2, abs=0.001)
    assert again.yielded and again.spoke_again


def test_talk_to_the_end_of_the_track_has_no_stop() -> None:
    clip = score(track((2.0, 8.0)))
    assert clip.stop_latency_s is None and not clip.yielded


def test_a_reply_over_before_the_clip_gives_it_nothing_to_come_over() -> None:
    clip = score(track((2.0, 2.8)))
    assert clip.reached and not clip.talking and not clip.yielded
    assert clip.stop_latency_s is None and clip.talk_over_s is None


def test_a_clip_never_played_is_a_point_not_reached() -> None:
    clip = score(track(), onset_s=None)
    assert clip == ClipScore(False, person_s=0.4)
    assert ClipScore.from_dict(clip.to_dict()) == clip
