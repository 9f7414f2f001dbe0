"""The LLM recall judges: is the fact asked for in what the system said (paper section 3.5)?

Two prompts, one per recall kind, each versioned: a verdict is cached by (item, model, prompt
version) through :func:`pmc.llm.cached_complete`, so a rerun asks nothing again, and every verdict
is stored with the judge's model, prompt version and raw answer (docs/architecture.md "Metrics").
The prompts follow the reference implementation's (docs/decisions.md section 7): the gold fact or an
unambiguous equivalent is correct, hedging is fine, a recap that omits the fact is wrong, an empty
transcript is wrong. Ours differ in one respect: the conversation-recall judge is given the stored
gold answer (and, where the caller has it, the conversation), because pmc stores gold answers for
both kinds.

A transcript with no words is still put to the judge, which the prompt tells to call it wrong:
every verdict then comes from the judge it names.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from pmc.llm import JudgeCache, LlmClient, LlmError, LlmRequest, cached_complete
from pmc.points import PointKind

FACT_PROMPT_VERSION = "fact-recall-1"
"""Bump whenever :data:`FACT_SYSTEM` or the user message's layout changes (the cache keys on it)."""

CONVERSATION_PROMPT_VERSION = "conversation-recall-1"
"""Bump whenever :data:`CONVERSATION_SYSTEM` or the user message's layout changes."""

_ANSWER_SHAPE = (
    'Answer with one JSON object: {"correct": true or false, "reason": "one short sentence"}.'
)

FACT_SYSTEM = (
    "You grade whether a spoken answer correctly answers a general-knowledge question. The "
    "answer was transcribed by speech recognition, so ignore spelling slips that leave the "
    "meaning clear. It is correct if it states the gold answer or an unambiguous equivalent "
    "(a synonym, a number in digits or in words). Hedging is fine. It is incorrect if it gives "
    "a different answer, lists several candidates, or talks around the question without "
    "stating the answer; a recap that omits the answer is incorrect. An empty transcript is "
    "incorrect. " + _ANSWER_SHAPE
)
"""The fact-recall (control) judge."""

CONVERSATION_SYSTEM = (
    "You grade whether a spoken answer correctly recalls a fact from an earlier conversation "
    "between two people. One of them asked the question; the answer comes from the other. The "
    "answer was transcribed by speech recognition, so ignore spelling slips that leave the "
    "meaning clear. It is correct if it states the gold answer or an unambiguous equivalent and "
    "addresses the question. Hedging is fine, and pronouns may speak from either person's side "
    '("you said", "I said"): judge the fact, not the wording. It is incorrect if it states a '
    "different fact, guesses from general knowledge, or recaps the conversation without "
    "stating the fact. An empty transcript is incorrect. Where the conversation is given, use "
    "only it. " + _ANSWER_SHAPE
)
"""The conversation-recall judge."""

EMPTY_TRANSCRIPT = "(empty: the system said nothing)"
"""Stands for a transcript with no text in the user message, so the judge sees it was empty."""

_PROMPTS = {
    PointKind.FACT_RECALL: (FACT_SYSTEM, FACT_PROMPT_VERSION),
    PointKind.CONVERSATION_RECALL: (CONVERSATION_SYSTEM, CONVERSATION_PROMPT_VERSION),
}

_DIGEST_CHARS = 16
"""Hex digits of the content hash in an item id: 64 bits, no collision among a run's items."""


class RecallJudgeError(LlmError):
    """The judge gave no usable verdict for one item; the run goes on without it.

    Raised for an answer that is not JSON, lacks a boolean ``correct``, or for a failed request;
    the scoring stage records the item as unjudged and carries on. The message names the item.

    Args:
        source: The judge, ``PROVIDER:MODEL``.
        item_id: The item it failed on (:attr:`RecallItem.item_id`).
        detail: What went wrong.
        status: The HTTP status, when the failure was an HTTP error.
    """

    def __init__(self, source: str, item_id: str, detail: str, status: int | None = None) -> None:
        self.item_id = item_id
        super().__init__(source, f"recall judge, item {item_id}: {detail}", status=status)


@dataclass(frozen=True)
class RecallItem:
    """One recall answer to judge.

    Attributes:
        point_id: The recall point.
        rollout: Which rollout of the point (0 is the scored one).
        kind: Fact recall or conversation recall.
        question: The question the system heard.
        gold_answer: The answer a correct reply states.
        transcript: What the system said (ASR of its played track).
        conversation: The history as ``Speaker: text`` lines, for conversation recall; may be
            empty, in which case the judge goes by the gold answer alone.
    """

    point_id: str
    rollout: int
    kind: PointKind
    question: str
    gold_answer: str
    transcript: str
    conversation: str = ""

    def __post_init__(self) -> None:
        if self.kind not in _PROMPTS:
            raise ValueError(f"the recall judges judge recall points, not {self.kind.value}")

    @property
    def prompt_version(self) -> str:
        """The version of this kind's prompt."""
        return _PROMPTS[self.kind][1]

    @property
    def item_id(self) -> str:
        """The cache's item id: point, rollout and a hash of everything the judge reads.

        From content, never from a position: the hash covers the question, the gold answer, the
        conversation and the transcript (the user message), so a new transcript or a corrected
        gold answer is asked afresh, while an identical one is not asked twice.
        """
        digest = hashlib.sha256(self.user_message().encode("utf-8")).hexdigest()
        return f"{self.point_id}/r{self.rollout}/{digest[:_DIGEST_CHARS]}"

    def user_message(self) -> str:
        """The user message put to the judge."""
        transcript = self.transcript.strip() or EMPTY_TRANSCRIPT
        lines = []
        if self.conversation.strip():
            lines += ["Conversation:", self.conversation.strip(), ""]
        lines += [
            f"Question: {self.question.strip()}",
            f"Gold answer: {self.gold_answer.strip()}",
            f"Transcript: {transcript}",
        ]
        return "\n".join(lines)

    def request(self) -> LlmRequest:
        """The full request: this kind's system prompt and :meth:`user_message`, temperature 0."""
        return LlmRequest(system=_PROMPTS[self.kind][0], user=self.user_message())


@dataclass(frozen=True)
class RecallVerdict:
    """What an LLM judge said of one recall answer.

    Attributes:
        model: The judge as configured, ``PROVIDER:MODEL`` (part of the cache key).
        answered_by: The model as the provider reported it (a dated snapshot where it names one).
        prompt_version: The prompt's version.
        item_id: The judged item (:attr:`RecallItem.item_id`).
        correct: The verdict.
        reason: The judge's one-sentence reason ("" when it gave none).
        raw: The judge's answer text exactly as returned.
    """

    model: str
    answered_by: str
    prompt_version: str
    item_id: str
    correct: bool
    reason: str
    raw: str

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "model": self.model,
            "answered_by": self.answered_by,
            "prompt_version": self.prompt_version,
            "item_id": self.item_id,
            "correct": self.correct,
            "reason": self.reason,
            "raw": self.raw,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RecallVerdict:
        """Inverse of :meth:`to_dict`."""
        return cls(
            model=str(data["model"]),
            answered_by=str(data["answered_by"]),
            prompt_version=str(data["prompt_version"]),
            item_id=str(data["item_id"]),
            correct=bool(data["correct"]),
            reason=str(data["reason"]),
            raw=str(data["raw"]),
        )


def judge_recall(item: RecallItem, client: LlmClient, cache: JudgeCache) -> RecallVerdict:
    """The judge's verdict on one recall answer, asked once per (item, model, prompt version).

    ``correct`` must be a JSON boolean; ``reason`` is optional. An answer that is JSON but not
    of that shape is cached like any other (the cache records what the model said) and raises
    each time it is read; a new prompt version asks afresh. An answer that is not JSON, and a
    failed request, are not cached, so a rerun asks again.

    Args:
        item: The answer to judge.
        client: The judge.
        cache: Where verdicts are kept.

    Raises:
        RecallJudgeError: No usable verdict for this item (the message names it).
        PmcError: The judge cannot be asked at all (its API key is not set): a run-level problem,
            left to stop the run.
    """
    item_id = item.item_id
    try:
        answer = cached_complete(client, cache, item_id, item.prompt_version, item.request())
    except LlmError as exc:
        detail = str(exc).removeprefix(f"{exc.source}: ")
        raise RecallJudgeError(client.name, item_id, detail, exc.status) from None
    correct = answer.data.get("correct")
    if not isinstance(correct, bool):
        raise RecallJudgeError(client.name, item_id, f"no boolean 'correct' in {answer.raw!r}")
    reason = answer.data.get("reason", "")
    return RecallVerdict(
        model=client.name,
        answered_by=answer.model,
        prompt_version=item.prompt_version,
        item_id=item_id,
        correct=correct,
        reason=reason if isinstance(reason, str) else str(reason),
        raw=answer.raw,
    )
