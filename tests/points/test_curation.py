"""Label-only gates, features, the cap and the draw, and recall prefixes, on hand-made labels."""

import numpy as np
import pytest

from pmc.audio import SAMPLE_RATE, AudioRef
from pmc.corpus import Channel, Conversation, SourceKind, Speaker, Word
from pmc.gate import GateParams
from pmc.labels import LabelKind, Labels
from pmc.points._candidates import pause_candidates, turn_end_candidates
from pmc.points._curate import (
    cap_per_conversation,
    features,
    heuristic_score,
    passes_audio_filters,
    seeded_draw,
)
from pmc.points._recall import control_fact, fact_bank, prefix_ends
from pmc.points._types import PointKind
from pmc.testing.labels import make_label

A, B = Channel.A, Channel.B
CID = "c"


def _conversation(a_words: list[Word], b_words: list[Word]) -> Conversation:
    audio = AudioRef("/dev/null", SAMPLE_RATE, SAMPLE_RATE * 60)
    return Conversation(
        CID,
        SourceKind.FOLDER,
        (Speaker(A, "a", audio, tuple(a_words)), Speaker(B, "b", audio, tuple(b_words))),
    )


def _labels(*labels: object) -> Labels:
    return Labels(CID, 60.0, tuple(labels))  # type: ignore[arg-type]


def _turn(who: Channel, start: float, end: float, text: str) -> object:
    return make_label(CID, LabelKind.TURN, who, start, end, text=text, words=len(text.split()))


@pytest.mark.parametrize(
    ("pause", "turn_start", "listener_word", "kept"),
    [
        ((3.0, 3.6), 1.0, None, True),
        ((3.0, 3.59), 1.0, None, False),  # shorter than 600 ms
        ((3.0, 3.6), 2.1, None, False),  # under 1 s of the turn before it
        ((3.0, 3.6), 1.0, (3.2, 3.4), False),  # a listener word inside
        ((3.0, 3.6), 1.0, (3.6, 3.8), True),  # a listener word just after it
    ],
)
def test_pause_gates(
    pause: tuple[float, float],
    turn_start: float,
    listener_word: tuple[float, float] | None,
    kept: bool,
) -> None:
    b_words = [Word("yeah", *listener_word)] if listener_word else []
    conversation = _conversation([Word("so", 2.5, 2.9), Word("the", 2.9, 3.0)], b_words)
    labels = _labels(
        _turn(A, turn_start, 8.0, "so the rest"),
        make_label(CID, LabelKind.PAUSE, A, *pause),
    )
    total, found = pause_candidates(conversation, labels)
    assert total == 1
    assert len(found) == int(kept)
    if kept:
        (c,) = found
        assert (c.boundary_conv_s, c.boundary_end_conv_s) == pause
        assert c.stream_end_conv_s == 8.0  # the resumed speech runs to the turn's end
        assert c.words_before == ("so", "the")


def test_pause_stream_stops_at_the_next_pause_or_five_seconds() -> None:
    conversation = _conversation([Word("well", 1.0, 2.0)], [])
    labels = _labels(
        _turn(A, 0.0, 20.0, "well"),
        make_label(CID, LabelKind.PAUSE, A, 2.0, 3.0),
        make_label(CID, LabelKind.PAUSE, A, 5.0, 6.0),
        make_label(CID, LabelKind.PAUSE, A, 7.0, 7.7),
    )
    _, found = pause_candidates(conversation, labels)
    assert [c.stream_end_conv_s for c in found] == [5.0, 7.0, 12.7]


@pytest.mark.parametrize(
    ("turn", "reply", "kept"),
    [
        ((0.0, 2.0, "one two three"), (2.5, 5.0, "a b c d e"), True),
        ((0.0, 0.9, "one two three"), (2.5, 5.0, "a b c d e"), False),  # turn under 1 s
        ((0.0, 2.0, "one two"), (2.5, 5.0, "a b c d e"), False),  # under three words
        ((0.0, 2.0, "one two three"), (5.1, 7.0, "a b c d e"), False),  # reply after 3 s
        ((0.0, 2.0, "one two three"), (2.5, 5.0, "a b c d"), False),  # reply under five words
        ((0.0, 2.0, "one two three"), (1.6, 5.0, "a b c d e"), True),  # overlapping reply
    ],
)
def test_turn_end_gates(
    turn: tuple[float, float, str], reply: tuple[float, float, str], kept: bool
) -> None:
    labels = _labels(_turn(A, *turn), _turn(B, *reply))
    total, found = turn_end_candidates(_conversation([], []), labels)
    assert total == 2
    assert len(found) == int(kept)
    if kept:
        assert found[0].reply is not None and found[0].reply.text == reply[2]


def test_features_and_score() -> None:
    labels = _labels(
        _turn(A, 0.0, 10.0, "so I went to the"),
        make_label(CID, LabelKind.PAUSE, A, 5.0, 6.5),
    )
    conversation = _conversation([Word("the", 4.5, 5.0)], [])
    (c,) = pause_candidates(conversation, labels)[1]
    values = features(c)
    # 1.5 s of a 2 s cap; 5 s of a 10 s cap; "the" is an article: not ambiguous.
    assert values == {"pause_length": 0.75, "turn_context": 0.5, "ambiguity": 0.0}
    assert heuristic_score(PointKind.PAUSE, values) == pytest.approx(0.4 * 0.75 + 0.2 * 0.5)


def test_audio_filters_need_silence_in_the_pause_and_speech_around_it() -> None:
    labels = _labels(_turn(A, 0.0, 8.0, "so it was"), make_label(CID, LabelKind.PAUSE, A, 3.0, 4.0))
    conversation = _conversation([Word("was", 2.5, 3.0)], [])
    (c,) = pause_candidates(conversation, labels)[1]
    t = np.arange(8 * SAMPLE_RATE) / SAMPLE_RATE
    speech = (0.1 * np.sin(2 * np.pi * 200 * t)).astype(np.float32)
    silent_pause = speech.copy()
    silent_pause[3 * SAMPLE_RATE : 4 * SAMPLE_RATE] = 0
    gate = GateParams()
    assert passes_audio_filters(c, {A: silent_pause, B: speech * 0}, gate)
    assert not passes_audio_filters(c, {A: speech, B: speech * 0}, gate)  # voiced pause
    quiet_before = silent_pause.copy()
    quiet_before[: 3 * SAMPLE_RATE] = 0
    assert not passes_audio_filters(c, {A: quiet_before, B: speech * 0}, gate)


def test_cap_keeps_the_best_three_per_group_and_breaks_ties_by_id() -> None:
    scored = [
        ("p1", "c/pause", 0.2),
        ("p2", "c/pause", 0.9),
        ("p3", "c/pause", 0.5),
        ("p4", "c/pause", 0.5),
        ("p5", "c/pause", 0.5),
        ("t1", "c/turn", 0.1),
    ]
    assert cap_per_conversation(scored) == {"p2", "p3", "p4", "t1"}
    assert cap_per_conversation(list(reversed(scored))) == {"p2", "p3", "p4", "t1"}


def test_seeded_draw() -> None:
    ids = [f"p{i:03d}" for i in range(500)]
    first = seeded_draw(ids, 300, seed=0)
    assert len(first) == 300 and len(set(first)) == 300
    assert first == seeded_draw(list(reversed(ids)), 300, seed=0)
    assert first != seeded_draw(ids, 300, seed=1)
    assert seeded_draw(ids[:10], 300, seed=0) == ids[:10]


def test_recall_prefixes_end_at_completed_turns() -> None:
    labels = _labels(
        *(make_label(CID, LabelKind.END_OF_TURN, A, t) for t in (12.0, 29.5, 58.0, 61.0, 95.0))
    )
    assert prefix_ends(labels) == [(30.0, 29.5), (60.0, 58.0), (90.0, 61.0), (120.0, 95.0)]
    # A conversation fact stated until 40 s: no 30 s prefix, the rest must reach past it.
    assert prefix_ends(labels, after_s=40.0) == [(60.0, 58.0), (90.0, 61.0), (120.0, 95.0)]


def test_fact_bank_and_stable_assignment() -> None:
    bank = fact_bank()
    assert len(bank) == 12
    assert all(q["question"].endswith("?") and q["answer"] for q in bank)
    assert control_fact("V00_S0001_I00000001") == control_fact("V00_S0001_I00000001")
    assigned = {control_fact(f"conv{i}").question for i in range(200)}
    assert len(assigned) == 12
