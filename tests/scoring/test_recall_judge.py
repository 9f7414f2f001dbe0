"""The LLM recall judges, against the scripted fake: prompts, verdicts, cache, bad answers."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from pmc.llm import JudgeCache, LlmError, LlmRequest, ScriptedLlm
from pmc.points import PointKind
from pmc.scoring._recall_judge import (
    CONVERSATION_PROMPT_VERSION,
    CONVERSATION_SYSTEM,
    EMPTY_TRANSCRIPT,
    FACT_PROMPT_VERSION,
    FACT_SYSTEM,
    RecallItem,
    RecallJudgeError,
    RecallVerdict,
    judge_recall,
)

FACT_ITEM = RecallItem(
    point_id="fact_recall-0123456789ab",
    rollout=0,
    kind=PointKind.FACT_RECALL,
    question="What is the capital city of France?",
    gold_answer="Paris",
    transcript="Oh, that's Paris, I'm pretty sure.",
)
CONVERSATION_ITEM = RecallItem(
    point_id="conversation_recall-ba9876543210",
    rollout=1,
    kind=PointKind.CONVERSATION_RECALL,
    question="Where did I say my sister lives?",
    gold_answer="in Lisbon",
    transcript="You said she lives in Lisbon.",
    conversation="Speaker B: my sister moved to Lisbon last year\nSpeaker A: oh nice",
)


@pytest.fixture
def cache(tmp_path: Path) -> JudgeCache:
    return JudgeCache(tmp_path / "recall-judge.jsonl")


def test_a_verdict_keeps_model_prompt_version_and_raw_answer(cache: JudgeCache) -> None:
    judge = ScriptedLlm([{"correct": True, "reason": "It says Paris."}], model="opus")
    verdict = judge_recall(FACT_ITEM, judge, cache)
    assert verdict == RecallVerdict(
        model="scripted:opus",
        answered_by="opus",
        prompt_version=FACT_PROMPT_VERSION,
        item_id=FACT_ITEM.item_id,
        correct=True,
        reason="It says Paris.",
        raw='{"correct": true, "reason": "It says Paris."}',
    )


def test_the_fact_judge_is_asked_the_fact_prompt(cache: JudgeCache) -> None:
    judge = ScriptedLlm([{"correct": False}])
    judge_recall(FACT_ITEM, judge, cache)
    (request,) = judge.requests
    assert request == LlmRequest(
        system=FACT_SYSTEM,
        user=(
            "Question: What is the capital city of France?\n"
            "Gold answer: Paris\n"
            "Transcript: Oh, that's Paris, I'm pretty sure."
        ),
        temperature=0.0,
    )
    for rule in ("unambiguous equivalent", "Hedging is fine", "recap", "empty transcript"):
        assert rule in FACT_SYSTEM
    assert '{"correct": true or false, "reason"' in FACT_SYSTEM


def test_the_conversation_judge_sees_the_conversation_question_and_gold_answer(
    cache: JudgeCache,
) -> None:
    judge = ScriptedLlm([{"correct": True, "reason": "Lisbon."}])
    verdict = judge_recall(CONVERSATION_ITEM, judge, cache)
    assert verdict.prompt_version == CONVERSATION_PROMPT_VERSION
    (request,) = judge.requests
    assert request.system == CONVERSATION_SYSTEM
    assert request.user == (
        "Conversation:\n"
        "Speaker B: my sister moved to Lisbon last year\nSpeaker A: oh nice\n"
        "\n"
        "Question: Where did I say my sister lives?\n"
        "Gold answer: in Lisbon\n"
        "Transcript: You said she lives in Lisbon."
    )
    without = replace(CONVERSATION_ITEM, conversation="")
    assert without.user_message().startswith("Question: ")


def test_an_empty_transcript_is_shown_as_empty_and_still_judged(cache: JudgeCache) -> None:
    judge = ScriptedLlm([{"correct": False, "reason": "Nothing was said."}])
    verdict = judge_recall(replace(FACT_ITEM, transcript="  "), judge, cache)
    assert not verdict.correct
    assert judge.requests[0].user.endswith(f"Transcript: {EMPTY_TRANSCRIPT}")


def test_a_second_ask_is_answered_by_the_cache(tmp_path: Path) -> None:
    path = tmp_path / "judge.jsonl"
    first = ScriptedLlm([{"correct": True, "reason": "yes"}])
    verdict = judge_recall(FACT_ITEM, first, JudgeCache(path))
    again = ScriptedLlm([])  # would fail if asked: its script is empty
    assert judge_recall(FACT_ITEM, again, JudgeCache(path)) == verdict  # reopened from disk
    assert (first.calls, again.calls) == (1, 0)


def test_item_ids_come_from_content_not_positions() -> None:
    item_id = FACT_ITEM.item_id
    assert item_id.startswith("fact_recall-0123456789ab/r0/")
    assert len(item_id.rsplit("/", 1)[1]) == 16
    rebuilt = RecallItem(**{f: getattr(FACT_ITEM, f) for f in reversed(FACT_ITEM.__dict__)})
    assert rebuilt.item_id == item_id
    changed = [
        replace(FACT_ITEM, rollout=1),
        replace(FACT_ITEM, transcript="Lyon."),
        replace(FACT_ITEM, gold_answer="Paris, France"),
        replace(FACT_ITEM, question="Capital of France?"),
    ]
    assert len({item_id, *(item.item_id for item in changed)}) == 5


def test_a_new_transcript_or_another_model_is_asked_afresh(cache: JudgeCache) -> None:
    judge = ScriptedLlm(
        lambda request: {"correct": "Paris" in request.user.split("Transcript:")[1]}
    )
    assert judge_recall(FACT_ITEM, judge, cache).correct
    assert not judge_recall(replace(FACT_ITEM, transcript="Lyon."), judge, cache).correct
    assert judge.calls == 2
    other = ScriptedLlm([{"correct": False}], model="gpt-4o")
    assert not judge_recall(FACT_ITEM, other, cache).correct  # not the first model's verdict
    assert other.calls == 1


def test_a_non_json_answer_names_the_item_and_is_asked_again(cache: JudgeCache) -> None:
    judge = ScriptedLlm(["I think it is correct.", {"correct": True}])
    with pytest.raises(RecallJudgeError, match="answer is not JSON") as caught:
        judge_recall(FACT_ITEM, judge, cache)
    assert caught.value.item_id == FACT_ITEM.item_id
    assert FACT_ITEM.item_id in str(caught.value)
    assert str(caught.value).count("scripted:fake") == 1
    assert len(cache) == 0
    assert judge_recall(FACT_ITEM, judge, cache).correct  # the rerun asks again


@pytest.mark.parametrize(
    "answer",
    [{"verdict": "yes"}, {"correct": "true"}, {"correct": 1}, {"correct": None, "reason": "?"}],
)
def test_an_answer_without_a_boolean_correct_names_the_item(
    cache: JudgeCache, answer: dict[str, object]
) -> None:
    judge = ScriptedLlm([answer])
    with pytest.raises(RecallJudgeError, match="no boolean 'correct'") as caught:
        judge_recall(CONVERSATION_ITEM, judge, cache)
    assert caught.value.item_id == CONVERSATION_ITEM.item_id
    assert CONVERSATION_ITEM.item_id in str(caught.value)
    # The answer is on record, and reading it again raises again without asking.
    assert len(cache) == 1
    with pytest.raises(RecallJudgeError):
        judge_recall(CONVERSATION_ITEM, judge, cache)
    assert judge.calls == 1


def test_a_fenced_answer_and_a_missing_reason_are_accepted(cache: JudgeCache) -> None:
    judge = ScriptedLlm(['```json\n{"correct": true}\n```'])
    verdict = judge_recall(FACT_ITEM, judge, cache)
    assert verdict.correct
    assert verdict.reason == ""
    assert verdict.raw == '```json\n{"correct": true}\n```'


def test_a_failed_request_becomes_an_error_naming_the_item(cache: JudgeCache) -> None:
    def failing(request: LlmRequest) -> dict[str, object]:
        raise LlmError("scripted:fake", "HTTP 500: overloaded", status=500)

    with pytest.raises(RecallJudgeError) as caught:
        judge_recall(FACT_ITEM, ScriptedLlm(failing), cache)
    assert caught.value.status == 500
    assert str(caught.value) == (
        f"scripted:fake: recall judge, item {FACT_ITEM.item_id}: HTTP 500: overloaded"
    )
    assert isinstance(caught.value, LlmError)
    assert len(cache) == 0


def test_only_recall_points_are_judged() -> None:
    with pytest.raises(ValueError, match="not turn_end"):
        replace(FACT_ITEM, kind=PointKind.TURN_END)


def test_a_verdict_round_trips_through_json(cache: JudgeCache) -> None:
    verdict = judge_recall(FACT_ITEM, ScriptedLlm([{"correct": True, "reason": "ok"}]), cache)
    data = json.loads(json.dumps(verdict.to_dict()))
    assert set(data) == {
        "model",
        "answered_by",
        "prompt_version",
        "item_id",
        "correct",
        "reason",
        "raw",
    }
    assert RecallVerdict.from_dict(data) == verdict
