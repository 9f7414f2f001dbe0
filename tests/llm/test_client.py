"""The LLM clients against a local fake HTTP server: request shapes, parsing, retries, secrets."""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pmc.errors import PmcError
from pmc.llm import (
    AnthropicClient,
    CacheKey,
    JudgeCache,
    LlmClient,
    LlmError,
    LlmRequest,
    OpenAIClient,
    ScriptedLlm,
    cached_complete,
    create_client,
    parse_json_answer,
)

KEY = "sk-canary-7f3a9c1e5b"
ECHO = object()
"""A reply body that echoes the request headers back inside the provider's error message."""

REQUEST = LlmRequest(system="Judge the reply. Answer in JSON.", user="Did B answer A?")


@dataclass
class Seen:
    method: str
    path: str
    headers: Message  # looked up case-insensitively, as HTTP headers are
    body: dict[str, Any]


@dataclass
class FakeApi:
    """A loopback server that records each request and answers from a queue."""

    url: str
    replies: list[tuple[int, Any]] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)
    delay_s: float = 0.0


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeApi]:
    for variable in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.delenv(variable, raising=False)
    for variable in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    fake = FakeApi(url="")
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length))
            fake.seen.append(Seen(self.command, self.path, self.headers, body))
            status, reply = fake.replies.pop(0) if fake.replies else (200, {})
            if reply is ECHO:
                auth = self.headers.get("Authorization") or self.headers.get("x-api-key")
                sent = dict(self.headers.items())
                reply = {"error": {"message": f"bad key {auth}; you sent {sent}"}}
            payload = reply if isinstance(reply, bytes) else json.dumps(reply).encode()
            stop.wait(fake.delay_s)
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting (the timeout test)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    # A short poll keeps shutdown quick (the default waits up to half a second).
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
    )
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield fake
    stop.set()
    server.shutdown()
    server.server_close()


def openai_reply(content: str, model: str = "gpt-4o-2024-08-06") -> dict[str, Any]:
    message = {"role": "assistant", "content": content}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }


def anthropic_reply(text: str, model: str = "claude-sonnet-4-5-20250929") -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
    }


class Sleeps(list[float]):
    """Records the backoff instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def openai(api: FakeApi, sleeps: Sleeps | None = None, **kwargs: Any) -> OpenAIClient:
    return OpenAIClient(
        "gpt-4o", base_url=f"{api.url}/v1", sleep=Sleeps() if sleeps is None else sleeps, **kwargs
    )


# Request shapes and response parsing


def test_openai_request_shape_and_answer(api: FakeApi) -> None:
    api.replies.append((200, openai_reply('{"verdict": "yes"}')))

    answer = openai(api).complete_json(REQUEST)

    [seen] = api.seen
    assert (seen.method, seen.path) == ("POST", "/v1/chat/completions")
    assert seen.headers["Authorization"] == f"Bearer {KEY}"
    assert seen.headers["Content-Type"] == "application/json"
    assert seen.body == {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": REQUEST.system},
            {"role": "user", "content": REQUEST.user},
        ],
        "temperature": 0.0,
        "max_completion_tokens": 800,
        "response_format": {"type": "json_object"},
    }
    assert answer.model == "gpt-4o-2024-08-06"
    assert answer.raw == '{"verdict": "yes"}'
    assert answer.data == {"verdict": "yes"}


def test_anthropic_request_shape_and_fenced_answer(api: FakeApi) -> None:
    text = '```json\n{"verdict": "no", "reason": "B changed topic"}\n```'
    api.replies.append((200, anthropic_reply(text)))
    request = LlmRequest(system=REQUEST.system, user=REQUEST.user, temperature=0.5, max_tokens=99)

    answer = AnthropicClient("claude-sonnet-4-5", base_url=api.url).complete_json(request)

    [seen] = api.seen
    assert (seen.method, seen.path) == ("POST", "/v1/messages")
    assert seen.headers["x-api-key"] == KEY
    assert seen.headers["anthropic-version"] == "2023-06-01"
    assert seen.headers["Authorization"] is None
    assert seen.body == {
        "model": "claude-sonnet-4-5",
        "system": REQUEST.system,
        "messages": [{"role": "user", "content": REQUEST.user}],
        "temperature": 0.5,
        "max_tokens": 99,
    }
    assert answer.raw == text
    assert answer.data == {"verdict": "no", "reason": "B changed topic"}
    assert answer.model == "claude-sonnet-4-5-20250929"


def test_anthropic_skips_blocks_before_the_text(api: FakeApi) -> None:
    reply = anthropic_reply('{"ok": true}')
    reply["content"].insert(0, {"type": "thinking", "thinking": "hmm", "signature": "x"})
    api.replies.append((200, reply))

    answer = AnthropicClient("claude-x", base_url=api.url).complete_json(REQUEST)

    assert answer.data == {"ok": True}


def test_a_prompt_that_never_says_json_gets_the_hint(api: FakeApi) -> None:
    api.replies.append((200, openai_reply("{}")))

    openai(api).complete_json(LlmRequest(system="Judge the reply.", user="Hello"))

    system = api.seen[0].body["messages"][0]["content"]
    assert system.startswith("Judge the reply.")
    assert "JSON" in system


@pytest.mark.parametrize(
    ("provider", "variable", "path", "reply"),
    [
        ("openai", "OPENAI_BASE_URL", "/v1/chat/completions", openai_reply('{"a": 1}')),
        ("anthropic", "ANTHROPIC_BASE_URL", "/v1/messages", anthropic_reply('{"a": 1}')),
    ],
)
def test_base_url_from_the_environment(
    api: FakeApi,
    monkeypatch: pytest.MonkeyPatch,
    provider: str,
    variable: str,
    path: str,
    reply: dict[str, Any],
) -> None:
    monkeypatch.setenv(variable, api.url + ("/v1" if provider == "openai" else "") + "/")
    api.replies.append((200, reply))

    client = create_client(f"{provider}:some-model")

    assert client.name == f"{provider}:some-model"
    assert client.complete_json(REQUEST).data == {"a": 1}
    assert api.seen[0].path == path
    assert api.seen[0].body["model"] == "some-model"


# JSON parsing


@pytest.mark.parametrize(
    "raw",
    [
        '{"a": 1}',
        '  {"a": 1}\n',
        '```json\n{"a": 1}\n```',
        '```\n{"a": 1}\n```',
        'Here you go:\n```json\n{"a": 1}\n```\nAnything else?',
        '```JSON\n  {"a": 1}  \n```',
    ],
)
def test_parse_json_answer_tolerates_a_fence(raw: str) -> None:
    assert parse_json_answer(raw, "openai:gpt-4o") == {"a": 1}


@pytest.mark.parametrize(
    ("raw", "what"),
    [
        ("Sure! The verdict is yes.", "not JSON"),
        ("", "not JSON"),
        ('{"a": 1', "not JSON"),
        ("[1, 2]", "not an object"),
        ('```json\n"yes"\n```', "not an object"),
    ],
)
def test_parse_json_answer_refuses_non_objects(raw: str, what: str) -> None:
    with pytest.raises(LlmError, match=what) as caught:
        parse_json_answer(raw, "openai:gpt-4o")
    assert str(caught.value).startswith("openai:gpt-4o: ")


def test_a_non_json_answer_from_the_api_is_an_llm_error(api: FakeApi) -> None:
    api.replies.append((200, openai_reply("I think the answer is yes.")))

    with pytest.raises(LlmError, match=r"^openai:gpt-4o: answer is not JSON .*yes") as caught:
        openai(api).complete_json(REQUEST)
    assert caught.value.status is None


def test_a_response_without_answer_text_is_an_llm_error(api: FakeApi) -> None:
    api.replies.append((200, {"choices": []}))

    with pytest.raises(LlmError, match="no answer text"):
        openai(api).complete_json(REQUEST)


def test_a_response_that_is_not_json_is_an_llm_error(api: FakeApi) -> None:
    api.replies.append((200, b"<html>gateway</html>"))

    with pytest.raises(LlmError, match="response is not a JSON object"):
        openai(api).complete_json(REQUEST)


# Failures and retries


def test_a_server_error_is_retried_after_a_backoff(api: FakeApi) -> None:
    api.replies += [(500, {"error": {"message": "boom"}}), (200, openai_reply('{"ok": 1}'))]
    sleeps = Sleeps()

    answer = openai(api, sleeps).complete_json(REQUEST)

    assert answer.data == {"ok": 1}
    assert sleeps == [1.0]
    assert len(api.seen) == 2
    assert api.seen[0].body == api.seen[1].body


def test_rate_limits_back_off_exponentially_then_give_up(api: FakeApi) -> None:
    api.replies += [(429, {"error": {"message": "slow down"}})] * 4
    sleeps = Sleeps()

    with pytest.raises(LlmError, match="HTTP 429: slow down") as caught:
        openai(api, sleeps).complete_json(REQUEST)

    assert caught.value.status == 429
    assert sleeps == [1.0, 2.0, 4.0]
    assert len(api.seen) == 4


def test_anthropic_overloaded_is_retried(api: FakeApi) -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    api.replies += [(529, overloaded), (200, anthropic_reply('{"ok": 1}'))]
    sleeps = Sleeps()

    client = AnthropicClient("claude-x", base_url=api.url, sleep=sleeps)

    assert client.complete_json(REQUEST).data == {"ok": 1}
    assert sleeps == [1.0]


def test_openai_401_is_not_retried_and_names_status_and_message(api: FakeApi) -> None:
    error = {"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error"}}
    api.replies.append((401, error))
    sleeps = Sleeps()

    with pytest.raises(LlmError) as caught:
        openai(api, sleeps).complete_json(REQUEST)

    assert str(caught.value) == "openai:gpt-4o: HTTP 401: Incorrect API key provided."
    assert caught.value.status == 401
    assert sleeps == []
    assert len(api.seen) == 1


def test_anthropic_error_shape_is_read(api: FakeApi) -> None:
    error = {"type": "error", "error": {"type": "invalid_request_error", "message": "bad model"}}
    api.replies.append((400, error))

    with pytest.raises(LlmError, match=r"^anthropic:nope: HTTP 400: bad model$"):
        AnthropicClient("nope", base_url=api.url).complete_json(REQUEST)


def test_a_timeout_is_retried_then_reported(api: FakeApi) -> None:
    api.delay_s = 1.0
    sleeps = Sleeps()

    with pytest.raises(LlmError, match=r"^openai:gpt-4o: no answer within 0.1 s$"):
        openai(api, sleeps, timeout_s=0.1, max_retries=1).complete_json(REQUEST)

    assert sleeps == [1.0]
    assert len(api.seen) == 2


def test_an_unreachable_host_is_reported_at_once(api: FakeApi) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sleeps = Sleeps()
    client = OpenAIClient("gpt-4o", base_url=f"http://127.0.0.1:{port}/v1", sleep=sleeps)

    with pytest.raises(LlmError, match=r"cannot reach http://127\.0\.0\.1"):
        client.complete_json(REQUEST)
    assert sleeps == []


@pytest.mark.parametrize(
    ("spec", "variable"),
    [("openai:gpt-4o", "OPENAI_API_KEY"), ("anthropic:claude-x", "ANTHROPIC_API_KEY")],
)
def test_a_missing_key_names_the_variable(
    api: FakeApi, monkeypatch: pytest.MonkeyPatch, spec: str, variable: str
) -> None:
    monkeypatch.delenv(variable)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{api.url}/v1")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)

    with pytest.raises(PmcError, match=variable) as caught:
        create_client(spec).complete_json(REQUEST)

    assert not isinstance(caught.value, LlmError)
    assert api.seen == []


def test_the_key_reaches_no_error_log_or_cache(
    api: FakeApi, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = JudgeCache(tmp_path / "judge.jsonl")
    client = openai(api)
    api.replies += [(401, ECHO)]

    with pytest.raises(LlmError) as caught:
        cached_complete(client, cache, "point-1", "v1", REQUEST)

    message = str(caught.value)
    assert "HTTP 401: bad key Bearer [redacted]" in message  # the server did echo the key
    assert KEY not in message
    assert KEY not in repr(caught.value.args)
    assert caught.value.__cause__ is None
    assert caught.value.__context__ is None
    assert not cache.path.exists()

    api.replies += [(500, ECHO), (200, openai_reply('{"ok": 1}'))]
    with caplog.at_level(logging.DEBUG):
        cached_complete(client, cache, "point-1", "v1", REQUEST)

    assert "retry 1" in caplog.text
    assert KEY not in caplog.text
    assert KEY not in cache.path.read_text(encoding="utf-8")
    stored = cache.get(CacheKey("point-1", "openai:gpt-4o", "v1"))
    assert stored is not None
    assert stored.data == {"ok": 1}


def test_a_secret_cut_by_truncation_still_does_not_leak() -> None:
    error = LlmError("openai:gpt-4o", "x" * 290 + KEY + "y" * 50, secret=KEY)

    assert KEY[:6] not in str(error)


def test_error_messages_are_one_line() -> None:
    error = LlmError("anthropic:claude-x", "HTTP 500:\n  <html>\n\tbroken</html>\n")

    assert str(error) == "anthropic:claude-x: HTTP 500: <html> broken</html>"


# Registry


def test_create_client_builds_each_provider() -> None:
    assert isinstance(create_client("openai:gpt-4o"), OpenAIClient)
    assert isinstance(create_client("anthropic:claude-x"), AnthropicClient)
    scripted = create_client("scripted:judge")
    assert isinstance(scripted, ScriptedLlm)
    assert (scripted.name, scripted.model) == ("scripted:judge", "judge")
    assert scripted.complete_json(REQUEST).data == {}


@pytest.mark.parametrize(
    ("spec", "what"),
    [
        ("gemini:pro", "unknown LLM provider 'gemini'"),
        ("openai", "not PROVIDER:MODEL"),
        ("openai:", "not PROVIDER:MODEL"),
    ],
)
def test_bad_specs_list_the_known_providers(spec: str, what: str) -> None:
    with pytest.raises(PmcError, match=what) as caught:
        create_client(spec)
    assert "anthropic, openai, scripted" in str(caught.value)


def test_the_scripted_provider_needs_no_import_of_pmc_testing() -> None:
    code = (
        "import sys\n"
        "from pmc.llm import create_client, LlmRequest\n"
        "assert 'pmc.testing' not in sys.modules\n"
        "print(create_client('scripted:x').complete_json(LlmRequest('s', 'u')).data)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "{}"


# The scripted fake


def test_scripted_answers_a_list_in_order_and_counts() -> None:
    fake = ScriptedLlm([{"n": 1}, {"n": 2}], model="judge")

    first = fake.complete_json(REQUEST)
    second = fake.complete_json(LlmRequest("s", "second"))

    assert (first.data, second.data) == ({"n": 1}, {"n": 2})
    assert first.raw == '{"n": 1}'
    assert fake.calls == 2
    assert [r.user for r in fake.requests] == [REQUEST.user, "second"]
    with pytest.raises(LlmError, match="only 2 answer"):
        fake.complete_json(REQUEST)
    assert fake.calls == 3


def test_scripted_calls_a_function_with_the_request() -> None:
    fake = ScriptedLlm(lambda request: {"echo": request.user})

    assert fake.complete_json(REQUEST).data == {"echo": REQUEST.user}
    assert fake.calls == 1


def test_scripted_raw_text_is_parsed_like_a_real_answer() -> None:
    fake = ScriptedLlm(['```json\n{"a": 1}\n```', "no json here"])

    assert fake.complete_json(REQUEST).data == {"a": 1}
    with pytest.raises(LlmError, match=r"^scripted:fake: answer is not JSON"):
        fake.complete_json(REQUEST)


def test_scripted_is_an_llm_client() -> None:
    fake: LlmClient = ScriptedLlm()

    assert fake.complete_json(REQUEST).data == {}
    assert fake.name == "scripted:fake"
