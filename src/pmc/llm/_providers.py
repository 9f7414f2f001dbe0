"""OpenAI and Anthropic over plain HTTPS (standard library only), and the scripted fake's entry.

Keys come from the environment at call time and go only into request headers; every error that
could echo them passes through :class:`LlmError`, which redacts them.
"""

from __future__ import annotations

import json
import logging
import os
import time
import urllib.error
import urllib.request
from abc import abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

from pmc.errors import PmcError
from pmc.llm._client import (
    LlmAnswer,
    LlmClient,
    LlmError,
    LlmRequest,
    parse_json_answer,
    register_llm,
)

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 60.0
"""Per attempt; a judge answer of a few hundred tokens comes back well within it."""

MAX_RETRIES = 3
"""Retries after the first attempt, for rate limits (429), server errors (5xx) and timeouts."""

BACKOFF_FIRST_S = 1.0
"""The first wait before a retry; it doubles each time (1, 2, 4 s): rides out a short overload."""

TOO_MANY_REQUESTS = 429
SERVER_ERRORS = range(500, 600)
"""Anthropic's 529 "overloaded" falls in here too."""

USER_AGENT = "pmc-llm"
"""Some front ends turn away urllib's default ``Python-urllib/x.y`` agent."""

JSON_HINT = "Answer with one JSON object."
"""Added to the system prompt when neither message mentions JSON: OpenAI's JSON mode refuses
requests whose messages never say "JSON", and Anthropic has no JSON mode at all."""

Sleep = Callable[[float], None]


def _api_key(variable: str) -> str:
    key = os.environ.get(variable, "").strip()
    if not key:
        raise PmcError(f"set {variable} to use this LLM provider")
    return key


def _system_prompt(request: LlmRequest) -> str:
    if "json" in f"{request.system} {request.user}".lower():
        return request.system
    return f"{request.system}\n\n{JSON_HINT}".strip()


def _error_detail(body: bytes) -> str:
    """The provider's own error message (``{"error": {"message": ...}}`` in both APIs)."""
    text = body.decode("utf-8", errors="replace")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return text
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    if isinstance(error, str):
        return error
    return text


class HttpLlmClient(LlmClient):
    """A JSON-over-HTTPS chat API: key from the environment, retries with exponential backoff.

    Args:
        model: The provider's model name.
        base_url: Where the API lives; else the provider's environment variable; else its default.
        timeout_s: Seconds to wait for each attempt.
        max_retries: Retries after the first attempt, on 429, 5xx and timeouts.
        sleep: Waits between retries (tests pass a recorder so they do not wait).
    """

    provider: ClassVar[str]
    key_variable: ClassVar[str]
    base_url_variable: ClassVar[str]
    default_base_url: ClassVar[str]
    path: ClassVar[str]

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_retries: int = MAX_RETRIES,
        sleep: Sleep = time.sleep,
    ) -> None:
        super().__init__(self.provider, model)
        self.base_url = base_url
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self._sleep = sleep

    @property
    def url(self) -> str:
        """The endpoint this client posts to (argument, else environment, else default)."""
        base = self.base_url or os.environ.get(self.base_url_variable) or self.default_base_url
        return base.rstrip("/") + self.path

    def complete_json(self, request: LlmRequest) -> LlmAnswer:
        """Ask for a JSON object answer and parse it (a Markdown code fence is tolerated).

        Raises:
            PmcError: The API key's environment variable is not set.
            LlmError: HTTP error, timeout, unreachable host, or an answer that is not JSON.
        """
        key = _api_key(self.key_variable)
        response = self._post(self._headers(key), self._body(request), key)
        raw = self._answer_text(response)
        if raw is None:
            raise LlmError(self.name, f"no answer text in the response: {response!r}", secret=key)
        answered_by = response.get("model")
        model = answered_by if isinstance(answered_by, str) and answered_by else self.model
        return LlmAnswer(model=model, raw=raw, data=parse_json_answer(raw, self.name))

    @abstractmethod
    def _headers(self, key: str) -> dict[str, str]:
        """Headers that carry the key and the API version."""

    @abstractmethod
    def _body(self, request: LlmRequest) -> dict[str, Any]:
        """The JSON request body."""

    @abstractmethod
    def _answer_text(self, response: dict[str, Any]) -> str | None:
        """The answer's text, or ``None`` when the response holds none."""

    def _post(self, headers: dict[str, str], body: dict[str, Any], key: str) -> dict[str, Any]:
        http = urllib.request.Request(
            self.url,
            data=json.dumps(body).encode("utf-8"),
            headers={"Content-Type": "application/json", "User-Agent": USER_AGENT, **headers},
            method="POST",
        )
        attempt = 0
        while True:
            outcome = self._attempt(http, key)
            if isinstance(outcome, bytes):
                return self._decode(outcome, key)
            failure, retry = outcome
            if not retry or attempt >= self.max_retries:
                raise failure
            delay = BACKOFF_FIRST_S * 2**attempt
            attempt += 1
            log.warning("%s; retry %d in %g s", failure, attempt, delay)
            self._sleep(delay)

    def _attempt(self, http: urllib.request.Request, key: str) -> bytes | tuple[LlmError, bool]:
        """One try: the response body, or the failure and whether it is worth retrying."""
        try:
            with urllib.request.urlopen(http, timeout=self.timeout_s) as reply:
                payload: bytes = reply.read()
                return payload
        except urllib.error.HTTPError as exc:
            with exc:
                detail = _error_detail(exc.read())
            failure = LlmError(self.name, f"HTTP {exc.code}: {detail}", status=exc.code, secret=key)
            return failure, exc.code == TOO_MANY_REQUESTS or exc.code in SERVER_ERRORS
        except (TimeoutError, urllib.error.URLError) as exc:
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            if isinstance(reason, TimeoutError):
                return LlmError(self.name, f"no answer within {self.timeout_s:g} s"), True
            return LlmError(self.name, f"cannot reach {self.url}: {reason}", secret=key), False

    def _decode(self, payload: bytes, key: str) -> dict[str, Any]:
        try:
            response = json.loads(payload)
        except (json.JSONDecodeError, UnicodeDecodeError):
            response = None
        if not isinstance(response, dict):
            text = payload.decode("utf-8", errors="replace")
            raise LlmError(self.name, f"response is not a JSON object: {text!r}", secret=key)
        return response


class OpenAIClient(HttpLlmClient):
    """OpenAI Chat Completions in JSON mode (``response_format: {"type": "json_object"}``)."""

    provider = "openai"
    key_variable = "OPENAI_API_KEY"
    base_url_variable = "OPENAI_BASE_URL"
    # The official SDK's default, so OPENAI_BASE_URL means the same here as there (with /v1).
    default_base_url = "https://api.openai.com/v1"
    path = "/chat/completions"

    def _headers(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}

    def _body(self, request: LlmRequest) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": [
                {"role": "system", "content": _system_prompt(request)},
                {"role": "user", "content": request.user},
            ],
            "temperature": request.temperature,
            # Replaces the deprecated max_tokens, which reasoning models refuse.
            "max_completion_tokens": request.max_tokens,
            "response_format": {"type": "json_object"},
        }

    def _answer_text(self, response: dict[str, Any]) -> str | None:
        try:
            content = response["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            return None
        return content if isinstance(content, str) else None


class AnthropicClient(HttpLlmClient):
    """Anthropic Messages; the JSON comes from the prompt (the API has no JSON mode)."""

    provider = "anthropic"
    key_variable = "ANTHROPIC_API_KEY"
    base_url_variable = "ANTHROPIC_BASE_URL"
    # The official SDK's default, so ANTHROPIC_BASE_URL means the same here as there (no /v1).
    default_base_url = "https://api.anthropic.com"
    path = "/v1/messages"
    # The Messages API's stable version header value.
    api_version = "2023-06-01"

    def _headers(self, key: str) -> dict[str, str]:
        return {"x-api-key": key, "anthropic-version": self.api_version}

    def _body(self, request: LlmRequest) -> dict[str, Any]:
        return {
            "model": self.model,
            "system": _system_prompt(request),
            "messages": [{"role": "user", "content": request.user}],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }

    def _answer_text(self, response: dict[str, Any]) -> str | None:
        blocks = response.get("content")
        if not isinstance(blocks, list):
            return None
        for block in blocks:  # the first text block (thinking blocks may come before it)
            if isinstance(block, dict) and block.get("type") == "text":
                text = block.get("text")
                return text if isinstance(text, str) else None
        return None


@register_llm("openai")
def _openai(model: str) -> LlmClient:
    return OpenAIClient(model)


@register_llm("anthropic")
def _anthropic(model: str) -> LlmClient:
    return AnthropicClient(model)
