"""Tokens, number words, token F1, content words and the strict recall matcher."""

from __future__ import annotations

import json

import pytest

from pmc.points import PointKind
from pmc.scoring._text import (
    STOP_WORDS,
    STRICT_VERSION,
    StrictVerdict,
    content_words,
    has_words,
    strict_recall,
    token_f1,
    tokens,
)

FACT = PointKind.FACT_RECALL
CONVERSATION = PointKind.CONVERSATION_RECALL


# --- tokens -----------------------------------------------------------------------------------


def test_tokens_are_lower_case_alphanumeric_runs() -> None:
    assert tokens("Hello, World! It's 3pm...") == ["hello", "world", "it", "s", "3pm"]


def test_accents_are_dropped_not_split_at() -> None:
    assert tokens("Café naïve Zoë") == ["cafe", "naive", "zoe"]


def test_thousands_separators_are_dropped() -> None:
    assert tokens("1,000 and 2,500,000 but 3.5 and 1,5") == [
        "1000",
        "and",
        "2500000",
        "but",
        "3",
        "5",
        "and",
        "1",
        "5",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("seven", ["7"]),
        ("Seven", ["7"]),
        ("zero", ["0"]),
        ("ten", ["10"]),
        ("seventeen", ["17"]),
        ("nineteen", ["19"]),
        ("sixty", ["60"]),
        ("twenty one", ["21"]),
        ("twenty-one", ["21"]),
        ("Ninety-Nine", ["99"]),
        ("forty  two", ["42"]),
        ("first", ["1st"]),
        ("second", ["2nd"]),
        ("third", ["3rd"]),
        ("eleventh", ["11th"]),
        ("twelfth", ["12th"]),
        ("thirteenth", ["13th"]),
        ("twentieth", ["20th"]),
        ("twenty-first", ["21st"]),
        ("thirty second", ["32nd"]),
        ("twenty third", ["23rd"]),
        ("hundred", ["hundred"]),
        ("nineteen ninety", ["19", "90"]),
    ],
)
def test_number_words_become_digits(text: str, expected: list[str]) -> None:
    assert tokens(text) == expected


def test_number_words_match_digits_and_ordinals_stay_apart() -> None:
    assert tokens("seven") == tokens("7")
    assert tokens("twenty-one") == tokens("21")
    assert tokens("the first") == tokens("the 1st")
    assert tokens("first") != tokens("one")


def test_numbers_split_by_punctuation_are_not_joined() -> None:
    assert tokens("I was twenty. One day") == ["i", "was", "20", "1", "day"]


def test_number_words_inside_longer_words_are_left_alone() -> None:
    assert tokens("someone often tent") == ["someone", "often", "tent"]


def test_has_words() -> None:
    assert has_words("uh")
    assert not has_words("")
    assert not has_words(" ?! ... ")


# --- token F1 ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hypothesis", "reference", "expected"),
    [
        # Same tokens, different case and punctuation.
        ("the cat sat", "The cat, sat!", 1.0),
        # P = 3/3, R = 3/6: F1 = 2 * 1 * 0.5 / 1.5.
        ("the cat sat", "the cat sat on the mat", 2 / 3),
        # Multiset: one "the" shared; P = 1/3, R = 1/1: F1 = 2 * (1/3) / (4/3).
        ("the the the", "the", 0.5),
        # [i, saw, 2, dogs] against [we, saw, 2, cats, and, 2, dogs]: shared saw, 2, dogs = 3;
        # P = 3/4, R = 3/7: F1 = 2 * (9/28) / (33/28) = 18/33.
        ("I saw two dogs", "we saw 2 cats and 2 dogs", 18 / 33),
        # Nothing shared.
        ("yes", "no", 0.0),
    ],
)
def test_token_f1(hypothesis: str, reference: str, expected: float) -> None:
    assert token_f1(hypothesis, reference) == pytest.approx(expected, abs=1e-12)
    assert token_f1(reference, hypothesis) == pytest.approx(expected, abs=1e-12)  # symmetric


def test_token_f1_counts_numbers_as_words_or_digits_alike() -> None:
    assert token_f1("seven days a week", "7 days a week") == 1.0


@pytest.mark.parametrize(
    ("hypothesis", "reference"), [("", "hi"), ("hi", ""), ("", ""), ("?!", "?!")]
)
def test_token_f1_is_zero_when_a_side_has_no_words(hypothesis: str, reference: str) -> None:
    assert token_f1(hypothesis, reference) == 0.0


# --- stop words and content words -------------------------------------------------------------


def test_stop_words_are_nltks_153_and_survive_tokenising() -> None:
    assert len(STOP_WORDS) == 153
    assert {"the", "you", "don", "t", "wouldn", "not", "no"} <= STOP_WORDS
    for word in STOP_WORDS:
        assert tokens(word) == [word]


def test_content_words_drop_stop_words_and_repeats_in_order() -> None:
    assert content_words("You said you went to Spain, Spain last summer!") == [
        "said",
        "went",
        "spain",
        "last",
        "summer",
    ]
    assert content_words("the Pacific") == ["pacific"]
    assert content_words("It is.") == []


# --- strict matcher ---------------------------------------------------------------------------


def test_fact_recall_needs_every_content_word() -> None:
    verdict = strict_recall("It was Washington, I think.", "George Washington", FACT)
    assert verdict == StrictVerdict(FACT, False, ("george", "washington"), ("washington",), 2)
    assert strict_recall("george washington was", "George Washington", FACT).correct


def test_fact_recall_ignores_case_punctuation_and_stop_words() -> None:
    verdict = strict_recall("Hmm... JUPITER!!!", "Jupiter", FACT)
    assert verdict.correct
    assert verdict.matched == ("jupiter",)
    assert strict_recall("It's the pacific, obviously", "the Pacific", FACT).correct


@pytest.mark.parametrize(
    ("transcript", "gold"),
    [
        ("There are 7 days in a week.", "seven"),
        ("seven days", "7"),
        ("60 minutes", "sixty"),
        ("it is twenty one", "21"),
        ("twenty-one", "twenty one"),
    ],
)
def test_fact_recall_matches_numbers_as_digits_or_words(transcript: str, gold: str) -> None:
    assert strict_recall(transcript, gold, FACT).correct


def test_strict_matching_has_no_stemming() -> None:
    assert not strict_recall("I love dogs", "the dog", FACT).correct


def test_an_empty_transcript_is_never_correct() -> None:
    for kind in (FACT, CONVERSATION):
        verdict = strict_recall("", "Paris", kind)
        assert not verdict.correct
        assert verdict.matched == ()
        assert verdict.needed == 1


def test_conversation_recall_needs_half_rounded_up() -> None:
    gold = "You went to Spain last summer"  # went, spain, last, summer: two needed
    verdict = strict_recall("You told me you were in Spain in the summer", gold, CONVERSATION)
    assert verdict.words == ("went", "spain", "last", "summer")
    assert verdict.needed == 2
    assert verdict.matched == ("spain", "summer")
    assert verdict.correct
    assert not strict_recall("Spain, maybe?", gold, CONVERSATION).correct
    # Three content words: two needed.
    three = "a red bicycle helmet"
    assert strict_recall("red bike helmet", three, CONVERSATION).needed == 2
    assert strict_recall("red bike helmet", three, CONVERSATION).correct
    assert not strict_recall("a bike", three, CONVERSATION).correct
    # One content word: it is needed.
    assert strict_recall("", "Portland", CONVERSATION).needed == 1


def test_the_same_answer_can_pass_conversation_recall_and_fail_fact_recall() -> None:
    assert strict_recall("It was Washington", "George Washington", CONVERSATION).correct
    assert not strict_recall("It was Washington", "George Washington", FACT).correct


def test_a_gold_answer_of_stop_words_only_matches_all_its_words() -> None:
    verdict = strict_recall("No, you didn't.", "No.", CONVERSATION)
    assert verdict.words == ("no",)
    assert verdict.correct
    assert not strict_recall("Yes, I did.", "No.", CONVERSATION).correct


def test_strict_recall_refuses_other_kinds_and_empty_gold_answers() -> None:
    with pytest.raises(ValueError, match="recall points, not pause"):
        strict_recall("hi", "Paris", PointKind.PAUSE)
    with pytest.raises(ValueError, match="no words"):
        strict_recall("hi", " ... ", FACT)


def test_strict_verdict_round_trips_through_json() -> None:
    verdict = strict_recall("Spain in the summer", "You went to Spain last summer", CONVERSATION)
    data = json.loads(json.dumps(verdict.to_dict()))
    assert data == {
        "kind": "conversation_recall",
        "correct": True,
        "words": ["went", "spain", "last", "summer"],
        "matched": ["spain", "summer"],
        "needed": 2,
        "version": STRICT_VERSION,
    }
    assert StrictVerdict.from_dict(data) == verdict
