"""Rule 5 (docs/labels.md): barge-ins and backchannels during a reply, on hand-built talk."""

import pytest

from pmc.labels import (
    EngineSettings,
    Flag,
    Label,
    LabelKind,
    Rule,
    label_conversation,
    label_id,
)
from tests.labels.test_engine import CID, A, B, conversation

BARGE_IN, REPLY_BC = LabelKind.BARGE_IN, LabelKind.REPLY_BACKCHANNEL
QUESTION = (0.0, 2.0, "how was the trip then")
REPLY = "it was lovely we drove up on friday night and"


def of(kind: LabelKind, *args: object, settings: EngineSettings | None = None) -> list[Label]:
    return label_conversation(conversation(*args), settings).of(kind)  # type: ignore[arg-type]


def test_a_listener_who_talks_over_a_reply_that_then_stops_is_a_barge_in() -> None:
    (barge,) = of(BARGE_IN, [QUESTION, (4.0, 6.0, "wait which lake was it")], [(2.3, 4.6, REPLY)])
    assert barge.id == label_id(CID, A, BARGE_IN, 4.0)
    assert (barge.speaker, barge.start_conv_s, barge.end_conv_s) == (A, 4.0, 4.6)
    assert barge.reply_offset_s == pytest.approx(1.7)
    assert barge.yield_s == pytest.approx(0.6)
    assert barge.talk_over_s == pytest.approx(0.6)  # rules 1 to 4 make it the yield (docs)
    assert barge.kept_talking_s is None
    assert (barge.rule, barge.confidence, barge.flags) == (Rule.BARGE_IN_REPLIER_YIELDS, 0.9, ())
    assert (barge.text, barge.words) == ("wait which lake was it", 5)


def test_the_speakers_swapped_give_the_same_barge_in_of_the_other() -> None:
    a = [QUESTION, (4.0, 6.0, "wait which lake was it")]
    b = [(2.3, 4.6, REPLY)]
    (one,) = of(BARGE_IN, a, b)
    (two,) = of(BARGE_IN, b, a)
    assert (one.speaker, two.speaker) == (A, B)
    assert (one.start_conv_s, one.yield_s, one.reply_offset_s) == (
        two.start_conv_s,
        two.yield_s,
        two.reply_offset_s,
    )


def test_a_replier_who_goes_on_under_the_listener_s_turn_has_not_yielded() -> None:
    found = of(BARGE_IN, [QUESTION, (4.0, 5.5, "wait which lake was that")], [(2.3, 8.0, REPLY)])
    assert found == []


def test_talk_within_half_a_second_of_the_reply_s_start_is_a_simultaneous_start() -> None:
    a = [QUESTION, (2.6, 5.5, "so anyway what about you")]
    assert of(BARGE_IN, a, [(2.3, 4.6, REPLY)]) == []
    later = EngineSettings(talk_over_min_offset_s=0.2)
    (barge,) = of(BARGE_IN, a, [(2.3, 4.6, REPLY)], settings=later)
    assert barge.reply_offset_s == pytest.approx(0.3)


def test_a_replier_who_stops_within_a_syllable_is_flagged_as_maybe_ending_anyway() -> None:
    (barge,) = of(BARGE_IN, [QUESTION, (4.0, 6.0, "wait which lake was it")], [(2.3, 4.2, REPLY)])
    assert barge.yield_s == pytest.approx(0.2)
    assert (barge.confidence, barge.flags) == (0.6, (Flag.TERMINAL_OVERLAP,))


def test_the_first_turn_is_nobody_s_reply() -> None:
    # B comes in over A's opening turn and A stops: an overlap, but A was not replying.
    a = [(0.0, 3.0, "so the thing about the cabin is")]
    assert of(BARGE_IN, a, [(2.0, 5.0, "sorry which cabin was it")]) == []


def test_a_backchannel_during_a_reply_records_how_long_the_replier_went_on() -> None:
    # B backchannels in A's opening turn (no reply yet) and in A's reply to B.
    a = [(0.0, 5.0, "so the thing about the cabin is that"), (7.5, 12.0, REPLY)]
    b = [(2.0, 2.4, "mm-hm"), (5.3, 7.2, "what was it like inside"), (9.0, 9.4, "yeah")]
    (bc,) = of(REPLY_BC, a, b)
    assert (bc.speaker, bc.start_conv_s, bc.end_conv_s, bc.text) == (B, 9.0, 9.4, "yeah")
    assert bc.reply_offset_s == pytest.approx(1.5)
    assert bc.kept_talking_s == pytest.approx(3.0)
    assert (bc.yield_s, bc.talk_over_s) == (None, None)
    assert (bc.rule, bc.confidence) == (Rule.BACKCHANNEL_IN_REPLY, 0.9)
    assert len(label_conversation(conversation(a, b)).of(LabelKind.BACKCHANNEL)) == 2


def test_the_measures_survive_json_and_other_labels_keep_their_form() -> None:
    labels = label_conversation(
        conversation([QUESTION, (4.0, 6.0, "wait which lake was it")], [(2.3, 4.6, REPLY)])
    )
    (barge,) = labels.of(BARGE_IN)
    assert Label.from_dict(barge.to_dict()) == barge
    turn = labels.of(LabelKind.TURN)[0]
    assert "yield_s" not in turn.to_dict() and "reply_offset_s" not in turn.to_dict()
    assert Label.from_dict(turn.to_dict()) == turn
