"""The provider-neutral interface: a request, an answer, the client ABC, its errors and registry."""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pmc.errors import PmcError
from pmc.registry import Registry

DEFAULT_MAX_TOKENS = 800
"""Enough for a judge's verdict with a short reason; a request can ask for more."""

MAX_DETAIL_CHARS = 300
"""Error details are cut here: a provider's error sentence fits, a whole echoed page does not."""

REDACTED = "[redacted]"
"""Stands in for a secret (an API key) wherever one would have appeared in an error."""

_FENCE = re.compile(r"```[A-Za-z]*[ \t]*\n(.*?)\n?[ \t]*```", re.DOTALL)
"""A Markdown code fence, as chat models like to wrap JSON in (```json ... ```)."""


@dataclass(frozen=True)
class LlmRequest:
    """One question for a chat model that answers with a JSON object.

    Attributes:
        system: The system prompt (instructions, the answer's JSON shape).
        user: The user message (the item to judge).
        temperature: Sampling temperature; 0 for the most repeatable answers.
        max_tokens: The most tokens the answer may use.
    """

    system: str
    user: str
    temperature: float = 0.0
    max_tokens: int = DEFAULT_MAX_TOKENS


@dataclass(frozen=True)
class LlmAnswer:
    """A model's answer.

    Attributes:
        model: The model that answered, as the provider reports it (a dated snapshot where the
            provider names one), else as requested.
        raw: The answer text exactly as returned.
        data: The JSON object parsed from ``raw``.
    """

    model: str
    raw: str
    data: dict[str, Any]


class LlmError(PmcError):
    """A provider failed to give a usable answer; the message is one line and holds no secret.

    Args:
        source: Who failed, e.g. ``"openai:gpt-4o"``.
        detail: What went wrong (HTTP status and the provider's message, a timeout, not JSON).
        status: The HTTP status, when the failure was an HTTP error.
        secret: A value that must not appear in the message (the API key); it is redacted.
    """

    def __init__(
        self, source: str, detail: str, *, status: int | None = None, secret: str | None = None
    ) -> None:
        if secret:
            detail = detail.replace(secret, REDACTED)
        detail = " ".join(detail.split())
        if len(detail) > MAX_DETAIL_CHARS:
            detail = detail[: MAX_DETAIL_CHARS - 1] + "…"
        self.source = source
        self.status = status
        super().__init__(f"{source}: {detail}")


class LlmClient(ABC):
    """A chat model that answers each request with one JSON object.

    Args:
        provider: The registry name of the provider, e.g. ``"openai"``.
        model: The provider's model name, e.g. ``"gpt-4o"``.
    """

    name: str
    """``PROVIDER:MODEL``, the spec that builds this client; cache keys and errors use it."""

    model: str
    """The model name as requested."""

    def __init__(self, provider: str, model: str) -> None:
        self.name = f"{provider}:{model}"
        self.model = model

    @abstractmethod
    def complete_json(self, request: LlmRequest) -> LlmAnswer:
        """Ask for a JSON object answer and parse it.

        Raises:
            LlmError: The provider failed, or its answer is not a JSON object.
        """


def parse_json_answer(raw: str, source: str) -> dict[str, Any]:
    """The JSON object in a model's answer, which may sit inside a Markdown code fence.

    Args:
        raw: The answer text.
        source: Who answered, for the error message.

    Raises:
        LlmError: The answer holds no JSON object.
    """
    text = raw.strip()
    fenced = _FENCE.search(text)
    if fenced is not None and not text.startswith(("{", "[")):
        text = fenced.group(1).strip()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LlmError(source, f"answer is not JSON ({exc.msg}): {raw!r}") from None
    if not isinstance(data, dict):
        raise LlmError(source, f"answer is JSON but not an object: {raw!r}")
    return data


LlmFactory = Callable[[str], LlmClient]
"""Builds a client for a model name."""

LLM_PROVIDERS: Registry[LlmFactory] = Registry("LLM provider")
"""LLM providers by the name before the colon of a spec."""
register_llm = LLM_PROVIDERS.register
"""Decorator: register a factory ``f(model) -> LlmClient`` under a provider name."""


def create_client(spec: str) -> LlmClient:
    """Build the client a ``PROVIDER:MODEL`` spec names, e.g. ``"anthropic:claude-sonnet-4-5"``.

    Args:
        spec: The provider and the model, separated by the first colon.

    Raises:
        PmcError: The spec is malformed or names an unknown provider.
    """
    provider, _, model = spec.partition(":")
    known = LLM_PROVIDERS.known()
    if not provider or not model:
        raise PmcError(f"LLM {spec!r} is not PROVIDER:MODEL (providers: {known})")
    factory = LLM_PROVIDERS.get(provider)
    if factory is None:
        raise PmcError(f"unknown LLM provider {provider!r} (known: {known})")
    return factory(model)
