"""A text model as a system: the recall ceiling of a model that reads what was said.

The paper quotes GPT-4o's recall on the transcript (97%, appendix E) without running it through
the benchmark; this system does run it. It hears the spoken question, transcribes it with the
bundled recogniser, reads the history as text (the same messages the hosted systems are given),
asks a chat model through :mod:`pmc.llm` for the answer, and speaks it with Piper a set time
after its endpointer (the cascade's) finds the question's end. Its answer is then transcribed
and scored like every other system's. It answers recall points only (its card's
``params.point_kinds``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from pmc.audio import FloatArray
from pmc.clock import Clock
from pmc.llm import LlmClient, LlmError, LlmRequest, create_client
from pmc.systems._adapter import EventKind, register_adapter
from pmc.systems._card import SystemCard
from pmc.systems._endpointer import (
    EndpointerCascade,
    EndpointerParams,
    say_at,
    transcript,
    voiced,
)

DEFAULT_MODEL = "openai:gpt-4o"
"""The model whose transcript recall the paper quotes (appendix E)."""
NO_ANSWER = "I don't remember."
"""What it says when the model gives no usable answer."""
SYSTEM_PROMPT = (
    "{identity}\n\nYou are in a spoken conversation. Below is what has been said so far, then "
    "the other person's question, as recognised from speech. Answer it in one short sentence, "
    'as you would aloud. Answer as {{"answer": "..."}}.'
)
"""A sentence, not a bare word: a lone name is often lost when the answer is transcribed for
scoring, which the person's own reference avoids the same way (``RECALL_ANSWER``)."""


def history_text(messages: list[dict[str, Any]]) -> str:
    """The history, one turn per line, each marked by who said it."""
    names = {"assistant": "You", "user": "Them"}
    return "\n".join(
        f"{names.get(str(m.get('role')), 'Them')}: {m.get('text', '')}"
        for m in messages
        if m.get("text")
    )


@dataclass(frozen=True)
class LlmTextParams(EndpointerParams):
    """An LLM text card's ``[params]``: the cascade's, and the chat model."""

    model: str = DEFAULT_MODEL
    """A ``pmc.llm`` spec, ``PROVIDER:MODEL``."""


@register_adapter("llm-text")
class LlmTextAdapter(EndpointerCascade):
    """The endpointer cascade with a chat model in place of its extractive answer.

    Card settings: the cascade's (``turn_detection.silence_ms`` and the rest: it finds the end
    of the question as the cascade finds a turn's end; ``params.reply_latency_ms``), and
    ``params.model`` (a ``pmc.llm`` spec, ``PROVIDER:MODEL``, its key from the provider's
    environment variable).
    """

    VERSION = "1"
    PARAMS: ClassVar[type[Any]] = LlmTextParams
    params: LlmTextParams

    def __init__(self, card: SystemCard, clock: Clock) -> None:
        super().__init__(card, clock)
        self.client: LlmClient = create_client(self.params.model)

    @classmethod
    def prepare(cls, card: SystemCard) -> None:
        """The cascade's models, and the fallback answer voiced."""
        super().prepare(card)
        voiced(NO_ANSWER)

    def ask(self, question: str) -> tuple[str, str]:
        """The model's answer to ``question`` over the history, and what it returned raw."""
        preloaded = self.preloaded
        messages = preloaded.messages if preloaded is not None else []
        identity = preloaded.identity_prompt if preloaded is not None else ""
        request = LlmRequest(
            system=SYSTEM_PROMPT.format(identity=identity),
            user=f"Conversation so far:\n{history_text(messages)}\n\nQuestion: {question}",
        )
        answer = self.client.complete_json(request)
        text = answer.data.get("answer")
        return (text.strip() if isinstance(text, str) and text.strip() else NO_ANSWER), answer.raw

    async def answer(self, start_ns: int, utterance: FloatArray) -> None:
        """Transcribe the question, ask the model, speak its answer from ``start_ns``."""
        question = await self.clock.run_blocking(lambda: transcript(utterance))
        try:
            text, raw = await self.clock.run_blocking(lambda: self.ask(question))
        except LlmError as exc:
            # The model failed this question: said in the trace; the system says it cannot.
            self.emit(EventKind.SIGNAL, detail={"llm_error": str(exc)})
            text, raw = NO_ANSWER, ""
        self.emit(EventKind.SIGNAL, detail={"question": question, "llm_raw": raw})
        await say_at(self, start_ns, text)
