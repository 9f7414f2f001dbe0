"""A scripted chat model, provider ``scripted``: tests and offline runs never need an API.

It lives with the real providers (not in :mod:`pmc.testing`) because a spec such as
``scripted:fake`` may be named wherever a provider is, and no stage may import the testing package.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from pmc.llm._client import (
    LlmAnswer,
    LlmClient,
    LlmError,
    LlmRequest,
    parse_json_answer,
    register_llm,
)

Script = Callable[[LlmRequest], "dict[str, Any] | str"] | Sequence["dict[str, Any] | str"]
"""A callable ``answer(request)``, or the answers to give in order."""


class ScriptedLlm(LlmClient):
    """Answers from a script, through the same JSON parsing as a real provider.

    A dict is the answer's JSON object; a string is the raw answer text (to test a fenced or
    broken answer, which then raises :class:`~pmc.llm.LlmError` as a real one would).

    Args:
        script: ``answer(request)``, or the answers in order; ``None`` answers ``{}`` every time.
        model: The fake model's name; the client is ``scripted:<model>``.
    """

    def __init__(self, script: Script | None = None, model: str = "fake") -> None:
        super().__init__("scripted", model)
        self._script = script
        self.calls = 0
        """How many requests were made."""
        self.requests: list[LlmRequest] = []
        """The requests made, in order."""

    def complete_json(self, request: LlmRequest) -> LlmAnswer:
        """The next scripted answer.

        Raises:
            LlmError: A list script has run out, or a raw answer is not a JSON object.
        """
        self.calls += 1
        self.requests.append(request)
        answer = self._next(request)
        raw = answer if isinstance(answer, str) else json.dumps(answer, sort_keys=True)
        return LlmAnswer(model=self.model, raw=raw, data=parse_json_answer(raw, self.name))

    def _next(self, request: LlmRequest) -> dict[str, Any] | str:
        if self._script is None:
            return {}
        if callable(self._script):
            return self._script(request)
        if self.calls > len(self._script):
            raise LlmError(self.name, f"the script has only {len(self._script)} answer(s)")
        return self._script[self.calls - 1]


@register_llm("scripted")
def _scripted(model: str) -> LlmClient:
    return ScriptedLlm(model=model)
