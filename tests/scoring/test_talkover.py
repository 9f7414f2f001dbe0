"""Talk over the person and yields (docs/architecture.md "Metrics"), on hand-placed evidence."""

import pytest

from pmc.asr import TimedWord
from pmc.points import PointKind
from pmc.scoring import (
    YIELD_QUIET_S,
    YIELD_WINDOW_S,
    Evidence,
    PauseOutcome,
    PauseScore,
    Score,
    ScoreSettings,
    ScoreStatus,
    TalkOver,
    YieldScore,
    talk_over,
    yield_to,
)


def talk(start: float, end: float, text: str = "well I think so") -> Evidence:
    """A word-bearing gate interval with its words spread over it."""
    tokens = text.split()
    step = (end - start) / len(tokens)
    words = tuple(
        TimedWord(t, start + i * step, start + (i + 1) * step, 0.9) for i, t in enumerate(tokens)
    )
    return Evidence(start, end, words, start)


def hum(start: float, end: float) -> Evidence:
    return Evidence(start, end, (), None)


TURN = ((0.0, 6.0),)
"""The person's live turn of a turn-end point that ends at 6 s."""


def test_talk_that_starts_before_the_turn_ends_talks_over_the_person() -> None:
    # "I see. Tell me more about that." 2 s before the person finished, then a reply.
    over = talk_over([talk(4.0, 5.2), talk(7.0, 8.0)], TURN)
    assert over == TalkOver(4.0, 1.2, 1, ((4.0, 5.2),))


def test_only_the_part_inside_the_turn_counts_and_every_stretch_is_counted() -> None:
    over = talk_over([talk(1.0, 1.5), talk(5.5, 7.0)], TURN)
    assert over is not None
    assert (over.onset_s, over.stretches, over.spans) == (1.0, 2, ((1.0, 1.5), (5.5, 6.0)))
    assert over.duration_s == pytest.approx(1.0)


def test_a_reply_after_the_turn_and_a_hum_inside_it_talk_over_nobody() -> None:
    assert talk_over([hum(2.0, 3.0), talk(6.3, 8.0)], TURN) is None


def test_at_a_pause_talk_begun_in_the_pause_is_not_talking_over_the_resumption() -> None:
    # Pause 2-3 s, resumption 3-5 s: a takeover running into the resumption is a yield question.
    person = ((0.0, 2.0), (3.0, 5.0))
    assert talk_over([talk(2.4, 3.6)], person) is None
    over = talk_over([talk(2.4, 3.6), talk(4.2, 4.8)], person)
    assert over == TalkOver(4.2, 0.6, 1, ((4.2, 4.8),))


def test_a_system_that_stops_within_the_window_yields_with_its_stop_latency() -> None:
    score = yield_to([talk(2.4, 3.6)], 3.0, track_end_s=8.0)
    assert score == YieldScore(3.0, True, 0.6, False)


def test_a_breath_inside_the_quiet_time_is_the_same_talk() -> None:
    gap = YIELD_QUIET_S - 0.2
    score = yield_to([talk(2.4, 3.6), talk(3.6 + gap, 4.5)], 3.0, track_end_s=8.0)
    assert score is not None and score.stop_latency_s == pytest.approx(1.5)
    assert score.yielded and not score.spoke_again


def test_talk_after_the_quiet_time_is_speaking_again() -> None:
    later = 3.6 + YIELD_QUIET_S + 0.2
    score = yield_to([talk(2.4, 3.6), talk(later, later + 1.0)], 3.0, track_end_s=8.0)
    assert score == YieldScore(3.0, True, 0.6, True)


def test_a_system_still_talking_past_the_window_has_not_yielded() -> None:
    end = 3.0 + YIELD_WINDOW_S + 0.1
    score = yield_to([talk(2.4, end)], 3.0, track_end_s=8.0)
    assert score is not None and not score.yielded
    assert score.stop_latency_s == pytest.approx(YIELD_WINDOW_S + 0.1)


def test_talk_to_the_end_of_the_track_never_stopped() -> None:
    assert yield_to([talk(2.4, 7.99)], 3.0, track_end_s=8.0) == YieldScore(3.0, False, None, False)


def test_no_talk_under_way_when_the_person_comes_in_is_no_yield_question() -> None:
    assert yield_to([talk(1.0, 2.5), talk(4.0, 5.0)], 3.0, track_end_s=8.0) is None
    assert yield_to([hum(2.0, 4.0)], 3.0, track_end_s=8.0) is None


def test_both_survive_the_score_s_json() -> None:
    pause = PauseScore(
        PauseOutcome.TAKEOVER, 0.4, False, False, False, None, YieldScore(3.0, True, 0.6, False)
    )
    score = Score(
        "pause-x",
        "sys",
        0,
        PointKind.PAUSE,
        "c",
        ScoreStatus.SCORED,
        ScoreSettings(),
        evidence=(talk(2.4, 3.6),),
        pause=pause,
        talk_over=TalkOver(4.2, 0.6, 1, ((4.2, 4.8),)),
    )
    assert Score.from_dict(score.to_dict()) == score
    assert ScoreSettings.from_dict({**ScoreSettings().to_dict(), "metrics": 1}).metrics == 1
    old = ScoreSettings().to_dict()
    del old["metrics"]
    assert ScoreSettings.from_dict(old).digest() != ScoreSettings().digest()  # made again
