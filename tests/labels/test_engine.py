"""The rule engine on small hand-built conversations, one rule at a time (paper section 3.2)."""

from collections.abc import Sequence

import pytest

from pmc.audio import AudioRef
from pmc.corpus import Activity, Channel, Conversation, SourceKind, Speaker, Word, WordSource
from pmc.labels import (
    ENGINE_VERSION,
    EngineSettings,
    Flag,
    Label,
    LabelKind,
    Labels,
    Rule,
    label_conversation,
    label_id,
)

A, B = Channel.A, Channel.B
TURN, PAUSE, EOT = LabelKind.TURN, LabelKind.PAUSE, LabelKind.END_OF_TURN
BC, TAKE, OVERLAP = LabelKind.BACKCHANNEL, LabelKind.FAILED_TAKE, LabelKind.OVERLAP
CID = "conv-1"

Stretch = tuple[float, float, str]
"""(start, end, words): one activity stretch; its words are spread evenly inside it. A word
written ``~word`` came from gap fill."""


def _speaker(channel: Channel, stretches: Sequence[Stretch]) -> Speaker:
    words: list[Word] = []
    activity: list[Activity] = []
    for start, end, text in stretches:
        activity.append(Activity(start, end))
        tokens = text.split()
        step = (end - start) / len(tokens) if tokens else 0.0
        for i, token in enumerate(tokens):
            source = WordSource.GAP_FILL if token.startswith("~") else WordSource.TRANSCRIPT
            w_start, w_end = start + i * step, start + (i + 1) * step
            words.append(Word(token.lstrip("~"), w_start, w_end, source))
    audio = AudioRef("/dev/null", 24000, 24000 * 600)
    return Speaker(channel, f"p-{channel.value}", audio, tuple(words), tuple(activity))


def conversation(a: Sequence[Stretch], b: Sequence[Stretch] = (), cid: str = CID) -> Conversation:
    """A ten-minute conversation from each speaker's stretches."""
    return Conversation(cid, SourceKind.FOLDER, (_speaker(A, a), _speaker(B, b)))


def lab(
    kind: LabelKind,
    speaker: Channel | None,
    start: float,
    end: float,
    rule: Rule,
    confidence: float = 1.0,
    *,
    flags: tuple[Flag, ...] = (),
    text: str = "",
    gap_fill: int = 0,
    ft: float | None = None,
    cid: str = CID,
) -> Label:
    """The label the engine should produce, with its content-derived id."""
    words = len(text.split())
    return Label(
        label_id(cid, speaker, kind, start),
        kind,
        speaker,
        start,
        end,
        rule,
        confidence,
        flags,
        text,
        words,
        gap_fill,
        ft,
    )


def turn(
    speaker: Channel,
    start: float,
    end: float,
    text: str,
    confidence: float = 1.0,
    *,
    flags: tuple[Flag, ...] = (),
    gap_fill: int = 0,
) -> Label:
    return lab(
        TURN,
        speaker,
        start,
        end,
        Rule.TURN_SPAN,
        confidence,
        flags=flags,
        text=text,
        gap_fill=gap_fill,
    )


def eot(
    speaker: Channel, at: float, rule: Rule, confidence: float = 1.0, ft: float | None = None
) -> Label:
    return lab(EOT, speaker, at, at, rule, confidence, ft=ft)


def pause(
    speaker: Channel,
    start: float,
    end: float,
    confidence: float = 1.0,
    rule: Rule = Rule.PAUSE_SAME_SPEAKER_RESUMES,
) -> Label:
    return lab(PAUSE, speaker, start, end, rule, confidence)


def overlap(speaker: Channel | None, start: float, end: float) -> Label:
    return lab(OVERLAP, speaker, start, end, Rule.OVERLAP_BOTH_VOICED)


NOBODY, OTHER = Rule.EOT_NOBODY_SPEAKS, Rule.EOT_OTHER_SPEAKER_STARTS


def labels_of(c: Conversation, settings: EngineSettings | None = None) -> tuple[Label, ...]:
    return label_conversation(c, settings).labels


# --- Gap closing and pauses -------------------------------------------------------------------


def test_gaps_up_to_250_ms_are_closed_and_300_ms_is_a_pause() -> None:
    c = conversation([(0.0, 1.0, "one two"), (1.25, 2.0, "three"), (2.3, 3.0, "four")])
    assert labels_of(c) == (
        turn(A, 0.0, 3.0, "one two three four"),
        pause(A, 2.0, 2.3),
        eot(A, 3.0, NOBODY),
    )


def test_a_gap_of_100_ms_is_closed() -> None:
    c = conversation([(0.0, 1.0, "one"), (1.1, 2.0, "two")])
    assert labels_of(c) == (turn(A, 0.0, 2.0, "one two"), eot(A, 2.0, NOBODY))


def test_bridge_setting_is_used_and_recorded() -> None:
    c = conversation([(0.0, 1.0, "one"), (1.3, 2.0, "two")])
    settings = EngineSettings(bridge_s=0.5)
    result = label_conversation(c, settings)
    assert result.labels == (turn(A, 0.0, 2.0, "one two"), eot(A, 2.0, NOBODY))
    assert result.settings == {"engine_version": ENGINE_VERSION, "engine": settings.to_dict()}
    assert result.settings["engine"]["bridge_s"] == 0.5


# --- The other speaker starts -----------------------------------------------------------------


def test_other_speaker_starts_after_the_offset() -> None:
    c = conversation([(0.0, 2.0, "hello there friend")], [(2.5, 5.0, "hi how are you doing")])
    assert labels_of(c) == (
        turn(A, 0.0, 2.0, "hello there friend"),
        eot(A, 2.0, OTHER, ft=0.5),
        turn(B, 2.5, 5.0, "hi how are you doing"),
        eot(B, 5.0, NOBODY),
    )


def test_other_speaker_starts_before_the_offset_gives_a_negative_transfer_and_an_overlap() -> None:
    c = conversation([(0.0, 2.0, "hello there friend")], [(1.5, 5.0, "hi how are you doing")])
    assert labels_of(c) == (
        turn(A, 0.0, 2.0, "hello there friend"),
        overlap(B, 1.5, 2.0),
        turn(B, 1.5, 5.0, "hi how are you doing"),
        eot(A, 2.0, OTHER, ft=-0.5),
        eot(B, 5.0, NOBODY),
    )


def test_overlap_belongs_to_the_speaker_who_started_second() -> None:
    c = conversation([(1.0, 3.0, "one two three")], [(0.0, 4.0, "four five six seven")])
    result = label_conversation(c)
    assert result.of(OVERLAP) == [overlap(A, 1.0, 3.0)]
    # B's turn is not split by A speaking inside it.
    assert result.of(TURN, B) == [turn(B, 0.0, 4.0, "four five six seven")]
    assert result.of(EOT, B) == [eot(B, 4.0, NOBODY)]
    # A's turn lies inside B's: B "starts" at A's offset, but started before A, so no transfer.
    assert result.of(EOT, A) == [eot(A, 3.0, OTHER, ft=None)]


def test_overlap_with_simultaneous_starts_belongs_to_nobody() -> None:
    c = conversation([(1.0, 3.0, "one two three")], [(1.0, 2.0, "four five six")])
    result = label_conversation(c)
    assert result.of(OVERLAP) == [overlap(None, 1.0, 2.0)]


def test_end_of_turn_confidence_is_lower_when_the_first_speaker_comes_back() -> None:
    # B answers with five words and A speaks again later: the decision is less clear-cut.
    c = conversation(
        [(0.0, 2.0, "hello there friend"), (5.5, 7.0, "good")],
        [(2.5, 5.0, "hi how are you doing")],
    )
    assert labels_of(c) == (
        turn(A, 0.0, 2.0, "hello there friend", 0.8),
        eot(A, 2.0, OTHER, 0.8, ft=0.5),
        turn(B, 2.5, 5.0, "hi how are you doing"),
        eot(B, 5.0, OTHER, ft=0.5),
        turn(A, 5.5, 7.0, "good", flags=()),
        eot(A, 7.0, NOBODY),
    )


# --- Nobody speaks ----------------------------------------------------------------------------


def test_nobody_speaks_for_more_than_five_seconds_is_an_end_of_turn() -> None:
    c = conversation([(0.0, 2.0, "a b c")], [(8.0, 10.0, "d e f")])
    assert labels_of(c) == (
        turn(A, 0.0, 2.0, "a b c"),
        eot(A, 2.0, NOBODY, ft=6.0),
        turn(B, 8.0, 10.0, "d e f"),
        eot(B, 10.0, NOBODY),
    )


def test_same_speaker_resuming_after_four_seconds_is_a_faded_pause() -> None:
    c = conversation([(0.0, 2.0, "a b"), (6.0, 8.0, "c d")])
    assert labels_of(c) == (
        turn(A, 0.0, 8.0, "a b c d", 0.733),
        pause(A, 2.0, 6.0, 0.733),
        eot(A, 8.0, NOBODY),
    )


@pytest.mark.parametrize(("gap", "confidence"), [(1.0, 1.0), (2.0, 1.0), (3.5, 0.8), (5.0, 0.6)])
def test_pause_confidence_fades_from_two_to_five_seconds(gap: float, confidence: float) -> None:
    c = conversation([(0.0, 2.0, "a b"), (2.0 + gap, 8.0, "c d")])
    assert label_conversation(c).of(PAUSE) == [pause(A, 2.0, 2.0 + gap, confidence)]


def test_same_speaker_resuming_after_six_seconds_starts_a_new_turn() -> None:
    c = conversation([(0.0, 2.0, "a b"), (8.0, 10.0, "c d")])
    assert labels_of(c) == (
        turn(A, 0.0, 2.0, "a b", 0.8),
        eot(A, 2.0, NOBODY, 0.8),
        turn(A, 8.0, 10.0, "c d"),
        eot(A, 10.0, NOBODY),
    )


def test_same_speaker_resuming_long_after_the_lookahead_is_a_sure_end_of_turn() -> None:
    c = conversation([(0.0, 2.0, "a b"), (10.0, 12.0, "c d")])
    assert label_conversation(c).of(EOT) == [eot(A, 2.0, NOBODY), eot(A, 12.0, NOBODY)]


# --- Backchannels -----------------------------------------------------------------------------

LONG = "one two three four five six seven eight"


def test_backchannel_while_the_other_talks_over_it() -> None:
    c = conversation([(0.0, 6.0, LONG)], [(2.0, 2.5, "mm hm")])
    assert labels_of(c) == (
        turn(A, 0.0, 6.0, LONG),
        lab(BC, B, 2.0, 2.5, Rule.BACKCHANNEL_SHORT_SEGMENT, 0.9, text="mm hm"),
        overlap(B, 2.0, 2.5),
        eot(A, 6.0, NOBODY),
    )


def test_wordless_backchannel_has_lower_confidence() -> None:
    c = conversation([(0.0, 6.0, LONG)], [(2.0, 2.5, "")])
    assert label_conversation(c).of(BC) == [
        lab(BC, B, 2.0, 2.5, Rule.BACKCHANNEL_SHORT_SEGMENT, 0.7)
    ]


def test_backchannel_in_the_others_pause_does_not_end_their_turn() -> None:
    c = conversation([(0.0, 3.0, "one two three"), (4.0, 6.0, "four five")], [(3.3, 3.7, "yeah")])
    assert labels_of(c) == (
        turn(A, 0.0, 6.0, "one two three four five"),
        pause(A, 3.0, 4.0),
        lab(BC, B, 3.3, 3.7, Rule.BACKCHANNEL_SHORT_SEGMENT, 0.9, text="yeah"),
        eot(A, 6.0, NOBODY),
    )


def test_three_words_are_not_a_backchannel() -> None:
    c = conversation(
        [(0.0, 3.0, "one two three"), (4.0, 6.0, "four five")], [(3.2, 3.8, "yeah yeah yeah")]
    )
    assert labels_of(c) == (
        turn(A, 0.0, 3.0, "one two three", 0.8),
        eot(A, 3.0, OTHER, 0.8, ft=0.2),
        turn(B, 3.2, 3.8, "yeah yeah yeah"),
        eot(B, 3.8, OTHER, ft=0.2),
        turn(A, 4.0, 6.0, "four five"),
        eot(A, 6.0, NOBODY),
    )


def test_longer_than_one_second_is_not_a_backchannel() -> None:
    c = conversation([(0.0, 6.0, LONG)], [(2.0, 3.1, "mm hm")])
    result = label_conversation(c)
    assert result.of(BC) == []
    assert result.of(TURN, B) == [turn(B, 2.0, 3.1, "mm hm")]


def test_short_segment_that_starts_its_speakers_own_turn_is_not_a_backchannel() -> None:
    c = conversation(
        [(0.0, 3.0, "one two three"), (8.0, 9.0, "nine")],
        [(3.3, 3.7, "well"), (4.0, 7.0, "I think that is right")],
    )
    assert labels_of(c) == (
        turn(A, 0.0, 3.0, "one two three", 0.8),
        eot(A, 3.0, OTHER, 0.8, ft=0.3),
        turn(B, 3.3, 7.0, "well I think that is right"),
        pause(B, 3.7, 4.0),
        eot(B, 7.0, OTHER, ft=1.0),
        turn(A, 8.0, 9.0, "nine"),
        eot(A, 9.0, NOBODY),
    )


def test_short_fragment_after_the_speakers_own_speech_is_not_a_backchannel() -> None:
    c = conversation(
        [(0.0, 2.0, "a b c d"), (7.0, 9.0, "e f")],
        [(2.5, 5.0, "this is my long reply"), (5.5, 5.9, "right")],
    )
    assert labels_of(c) == (
        turn(A, 0.0, 2.0, "a b c d", 0.8),
        eot(A, 2.0, OTHER, 0.8, ft=0.5),
        turn(B, 2.5, 5.9, "this is my long reply right"),
        pause(B, 5.0, 5.5),
        eot(B, 5.9, OTHER, ft=1.1),
        turn(A, 7.0, 9.0, "e f"),
        eot(A, 9.0, NOBODY),
    )


# --- Failed takes -----------------------------------------------------------------------------


def test_failed_take_is_a_pause_and_the_first_speakers_turn_goes_on() -> None:
    c = conversation(
        [(0.0, 3.0, "so I was thinking"), (4.0, 7.0, "about the trip again")],
        [(3.3, 4.3, "but what if")],
    )
    assert labels_of(c) == (
        turn(A, 0.0, 7.0, "so I was thinking about the trip again", 0.7),
        pause(A, 3.0, 4.0, 0.7, Rule.PAUSE_FAILED_TAKE),
        lab(TAKE, B, 3.3, 4.3, Rule.FAILED_TAKE_YIELDED, 0.7, text="but what if"),
        overlap(A, 4.0, 4.3),
        eot(A, 7.0, NOBODY),
    )


def test_reply_that_ends_before_the_first_speaker_resumes_is_a_turn() -> None:
    c = conversation(
        [(0.0, 3.0, "so I was thinking"), (4.0, 7.0, "about the trip again")],
        [(3.3, 3.8, "but what if")],
    )
    assert labels_of(c) == (
        turn(A, 0.0, 3.0, "so I was thinking", 0.8),
        eot(A, 3.0, OTHER, 0.8, ft=0.3),
        turn(B, 3.3, 3.8, "but what if"),
        eot(B, 3.8, OTHER, ft=0.2),
        turn(A, 4.0, 7.0, "about the trip again"),
        eot(A, 7.0, NOBODY),
    )


def test_other_speaker_who_keeps_talking_past_the_yield_window_takes_the_turn() -> None:
    c = conversation(
        [(0.0, 3.0, "so I was thinking"), (4.0, 7.0, "about the trip again")],
        [(3.3, 4.6, "but what if")],
    )
    result = label_conversation(c)
    assert result.of(TAKE) == []
    assert result.of(PAUSE) == []
    assert result.of(EOT) == [
        eot(A, 3.0, OTHER, 0.8, ft=0.3),
        eot(B, 4.6, OTHER, ft=-0.6),
        eot(A, 7.0, NOBODY),
    ]


def test_more_than_five_words_is_not_a_failed_take() -> None:
    c = conversation(
        [(0.0, 3.0, "so I was thinking"), (4.0, 7.0, "about the trip again")],
        [(3.3, 4.3, "but what if we go now")],
    )
    result = label_conversation(c)
    assert result.of(TAKE) == []
    assert result.of(TURN, B) == [turn(B, 3.3, 4.3, "but what if we go now")]


# --- Flags ------------------------------------------------------------------------------------


def test_lexical_turn_under_400_ms_is_flagged() -> None:
    c = conversation([(0.0, 0.3, "hi")])
    assert label_conversation(c).of(TURN) == [
        turn(A, 0.0, 0.3, "hi", flags=(Flag.SHORT_LEXICAL_TURN,))
    ]


def test_short_turn_without_words_and_a_500_ms_turn_are_not_flagged() -> None:
    c = conversation([(0.0, 0.3, ""), (10.0, 10.5, "hi")])
    assert label_conversation(c).of(TURN) == [
        turn(A, 0.0, 0.3, "", 1.0),
        turn(A, 10.0, 10.5, "hi"),
    ]


def test_turn_with_half_its_words_from_gap_fill_is_flagged() -> None:
    c = conversation([(0.0, 2.0, "~uh ~huh yes no")])
    assert label_conversation(c).of(TURN) == [
        turn(A, 0.0, 2.0, "uh huh yes no", flags=(Flag.GAP_FILL_WORDS,), gap_fill=2)
    ]


def test_turn_with_a_quarter_of_its_words_from_gap_fill_is_not_flagged() -> None:
    c = conversation([(0.0, 2.0, "~uh huh yes no")])
    assert label_conversation(c).of(TURN) == [turn(A, 0.0, 2.0, "uh huh yes no", gap_fill=1)]


def test_short_gap_filled_turn_gets_both_flags() -> None:
    c = conversation([(0.0, 0.3, "~um")])
    flags = (Flag.GAP_FILL_WORDS, Flag.SHORT_LEXICAL_TURN)
    assert label_conversation(c).of(TURN) == [turn(A, 0.0, 0.3, "um", flags=flags, gap_fill=1)]


# --- Ids, order, settings ---------------------------------------------------------------------


def test_ids_come_from_content_and_survive_an_earlier_label() -> None:
    base = [(10.0, 13.0, "one two three")], [(13.5, 16.0, "four five six")]
    before = label_conversation(conversation(*base))
    for label in before.labels:
        assert label.id == label_id(CID, label.speaker, label.kind, label.start_conv_s)
    # An unrelated exchange long before: new labels come first, the old ones are unchanged.
    after = label_conversation(conversation(base[0], [(0.0, 2.0, "much earlier"), *base[1]]))
    assert after.labels[2:] == before.labels
    assert after.labels[:2] == (turn(B, 0.0, 2.0, "much earlier"), eot(B, 2.0, NOBODY, ft=8.0))
    assert len({label.id for label in after.labels}) == len(after.labels)


def test_ids_differ_by_conversation() -> None:
    one = label_conversation(conversation([(0.0, 2.0, "a b")], cid="one"))
    two = label_conversation(conversation([(0.0, 2.0, "a b")], cid="two"))
    assert [x.id for x in one.labels] == [
        label_id("one", A, TURN, 0.0),
        label_id("one", A, EOT, 2.0),
    ]
    assert {x.id for x in one.labels}.isdisjoint(x.id for x in two.labels)


def test_labels_are_sorted_by_start_and_carry_the_settings() -> None:
    c = conversation(
        [(0.0, 3.0, "so I was thinking"), (4.0, 7.0, "about the trip again"), (12.0, 13.0, "ok")],
        [(3.3, 4.3, "but what if"), (5.0, 5.4, "mm"), (7.5, 11.0, "well I would rather not go")],
    )
    result = label_conversation(c)
    starts = [x.start_conv_s for x in result.labels]
    assert starts == sorted(starts)
    assert len(result.labels) > 10
    assert result.settings == {
        "engine_version": ENGINE_VERSION,
        "engine": EngineSettings().to_dict(),
    }
    assert result.conversation_id == CID
    assert result.duration_s == 600.0
    assert Labels.from_dict(result.to_dict()) == result


def test_empty_conversation_has_no_labels() -> None:
    result = label_conversation(conversation([], []))
    assert result.labels == ()
    assert result.settings["engine_version"] == ENGINE_VERSION
