"""One small provider-neutral client for chat models that answer with a JSON object.

Build a client from a ``PROVIDER:MODEL`` spec (``openai:gpt-4o``, ``anthropic:claude-sonnet-4-5``,
``scripted:NAME`` for :class:`ScriptedLlm`, a fake that answers from a script), ask with
:class:`LlmRequest`, get an :class:`LlmAnswer`. Keys come from ``OPENAI_API_KEY`` /
``ANTHROPIC_API_KEY`` when a request is made, and never appear in errors, logs or the cache.
:func:`cached_complete` with a :class:`JudgeCache` asks each (item, model, prompt version)
once: a rerun asks nothing again.
"""

from pmc.llm._cache import CacheKey, JudgeCache, cached_complete
from pmc.llm._client import (
    LLM_PROVIDERS,
    LlmAnswer,
    LlmClient,
    LlmError,
    LlmFactory,
    LlmRequest,
    create_client,
    parse_json_answer,
    register_llm,
)
from pmc.llm._providers import (
    AnthropicClient,
    HttpLlmClient,
    OpenAIClient,
)
from pmc.llm._scripted import Script, ScriptedLlm

__all__ = [
    "LLM_PROVIDERS",
    "AnthropicClient",
    "CacheKey",
    "HttpLlmClient",
    "JudgeCache",
    "LlmAnswer",
    "LlmClient",
    "LlmError",
    "LlmFactory",
    "LlmRequest",
    "OpenAIClient",
    "Script",
    "ScriptedLlm",
    "cached_complete",
    "create_client",
    "parse_json_answer",
    "register_llm",
]
