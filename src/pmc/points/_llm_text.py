"""What an LLM writes for the points stage: conversation facts and identity prompts (3.3, 3.4).

Facts: one specific fact stated in the first 30 s, extracted, then checked for specificity by a
second question, and dropped when its question names a speaker label. Identity prompts: written
from the transcript, then checked against every recall gold answer of the conversation; a prompt
that would hand over an answer is replaced by the template. Everything is cached.
"""

from __future__ import annotations

import re
from typing import Any

from pmc.corpus import Channel
from pmc.labels import LabelKind, Labels
from pmc.llm import JudgeCache, LlmClient, LlmRequest, cached_complete
from pmc.points._prompts import identity_prompt, leaks_answer
from pmc.points._recall import RecallFact

FACT_PROMPT_VERSION = "fact-1"
SPECIFIC_PROMPT_VERSION = "specific-1"
IDENTITY_PROMPT_VERSION = "identity-1"
FACT_WINDOW_S = 30.0
"""Conversation recall asks about a fact stated in the first 30 seconds (paper section 3.3)."""
IDENTITY_TRANSCRIPT_S = 163.84
"""The identity prompt is written from the transcript of at most the history window."""

_SPEAKER_LABEL = re.compile(r"\b(speaker\s*[ab12]|person\s*[ab12])\b", re.IGNORECASE)

SYSTEM = "You prepare test material for spoken dialogue systems. Answer with one JSON object."
FACT_TASK = (
    "Below are the first 30 seconds of a casual conversation between speaker A and speaker B. "
    "Pick one specific fact either of them states (a name, a number, a place, a thing), and "
    "write the question speaker B would ask speaker A about it later, in B's own words: 'I', "
    "'me', 'my' mean B and 'you', 'your' mean A. Never say 'speaker'. Answer as "
    '{{"fact": "...", "question": "...", "answer": "a few words"}}, or {{"fact": ""}} if '
    "nothing specific is said.\n\nTranscript:\n{transcript}"
)
SPECIFIC_TASK = (
    "Is this a specific fact that can be checked against a short answer, not general "
    'small talk? Fact: "{fact}". Answer: "{answer}". Answer as {{"specific": true or false}}.'
)
IDENTITY_TASK = (
    "Below is a conversation between speaker A and speaker B. Write a short identity prompt "
    "(two or three sentences, second person) for speaker {me}: who they are and how they know "
    "the other person, and that the assistant turns are their own earlier words. Do not "
    'mention any specific fact from the conversation. Answer as {{"prompt": "..."}}.'
    "\n\nTranscript:\n{transcript}"
)


def transcript(labels: Labels, until_s: float) -> str:
    """Turns that start before ``until_s``, one per line."""
    return "\n".join(
        f"Speaker {t.speaker.value if t.speaker else '?'}: {t.text}"
        for t in labels.of(LabelKind.TURN)
        if t.start_conv_s < until_s and t.text
    )


def extract_fact(labels: Labels, client: LlmClient, cache: JudgeCache) -> RecallFact | None:
    """A specific fact of the first 30 s as a question from B to A, or None."""
    cid = labels.conversation_id
    request = LlmRequest(SYSTEM, FACT_TASK.format(transcript=transcript(labels, FACT_WINDOW_S)))
    data: dict[str, Any] = cached_complete(
        client, cache, f"{cid}/fact", FACT_PROMPT_VERSION, request
    ).data
    fact, question, answer = (str(data.get(k, "")).strip() for k in ("fact", "question", "answer"))
    if not (fact and question and answer) or _SPEAKER_LABEL.search(question):
        return None
    check = LlmRequest(SYSTEM, SPECIFIC_TASK.format(fact=fact, answer=answer))
    verdict = cached_complete(client, cache, f"{cid}/specific", SPECIFIC_PROMPT_VERSION, check)
    if verdict.data.get("specific") is not True:
        return None
    return RecallFact(question, answer, fact, _fact_end(labels, answer))


def _fact_end(labels: Labels, answer: str) -> float:
    """The end of the first early turn that holds the answer's words (else the window's end)."""
    wanted = {w.lower().strip(".,?!") for w in answer.split()}
    for turn in labels.of(LabelKind.TURN):
        said = {w.lower().strip(".,?!") for w in turn.text.split()}
        if turn.start_conv_s < FACT_WINDOW_S and wanted <= said:
            return turn.end_conv_s
    return FACT_WINDOW_S


def written_identity_prompt(
    labels: Labels, system: Channel, answers: list[str], client: LlmClient, cache: JudgeCache
) -> str:
    """An LLM-written identity prompt for ``system``, or the template when it would leak."""
    task = IDENTITY_TASK.format(
        me=system.value, transcript=transcript(labels, IDENTITY_TRANSCRIPT_S)
    )
    item = f"{labels.conversation_id}/identity/{system.value}"
    answer = cached_complete(client, cache, item, IDENTITY_PROMPT_VERSION, LlmRequest(SYSTEM, task))
    prompt = str(answer.data.get("prompt", "")).strip()
    if not prompt or leaks_answer(prompt, answers):
        return identity_prompt(system)
    return prompt
