"""The fakes drift and push back as the real APIs do (raw websocket clients, no adapter).

Drift (events and fields a client does not know) is in every session; push-back (a refused
handshake, a rate limit, ``goAway``) comes exactly where the behaviour puts it.
"""

import asyncio
import json
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from pmc.testing.hosted import Dialect, FakeBehaviour, FakeServer, serve_fake
from tests.systems.test_hosted_fakes import HEADERS, XAI_SESSION, events_until, send, speech

GEMINI_HEADERS = {"x-goog-api-key": "k"}
GEMINI_SETUP = {
    "setup": {
        "model": "models/fake",
        "generationConfig": {"responseModalities": ["AUDIO"]},
        "realtimeInputConfig": {"automaticActivityDetection": {"disabled": True}},
    }
}
OPENAI_SESSION = {"type": "realtime", "audio": {"input": {"turn_detection": None}}}
DRIFT = FakeBehaviour(reply_text="Right.", latency_ms=0.0, unknown_every=True, fault_sessions=0)
"""Drift in every session: no session gets faults here, and the drift is there all the same."""


async def until_closed(ws: ClientConnection) -> tuple[list[dict[str, Any]], int, str]:
    """Every message until the server closes, then its close code and reason."""
    got: list[dict[str, Any]] = []
    async with asyncio.timeout(5):
        try:
            while True:
                got.append(json.loads(await ws.recv()))
        except ConnectionClosed as closed:
            assert closed.rcvd is not None
            return got, closed.rcvd.code, closed.rcvd.reason


def test_drift_is_kept_without_faults_and_push_back_is_not() -> None:
    behaviour = FakeBehaviour(
        unknown_every=True, refuse_every=2, rate_limit_after=3, go_away_after=4
    )
    calm = behaviour.without_faults()
    assert calm.unknown_every
    assert (calm.refuse_every, calm.rate_limit_after, calm.go_away_after) == (None, None, None)
    assert (FakeBehaviour(retry_after_s=2.0).retry_after, calm.retry_after) == ("2", "1")
    assert FakeBehaviour(retry_after_s=0.25).retry_after == "0.25"
    with pytest.raises(ValueError, match="refuse_every"):
        FakeBehaviour(refuse_every=0)


@pytest.mark.parametrize("dialect", [Dialect.OPENAI, Dialect.XAI])
def test_an_unknown_event_follows_every_response_created(dialect: Dialect) -> None:
    session = XAI_SESSION if dialect is Dialect.XAI else OPENAI_SESSION

    async def main() -> tuple[FakeServer, list[dict[str, Any]]]:
        got: list[dict[str, Any]] = []
        async with (
            serve_fake(dialect.session, DRIFT) as fake,
            connect(fake.url, additional_headers=HEADERS) as ws,
        ):
            await send(ws, type="session.update", session=session)
            got += await events_until(ws, "session.updated")
            for _ in range(2):
                await send(ws, type="input_audio_buffer.append", audio=speech(0.3))
                await send(ws, type="input_audio_buffer.commit")
                got += await events_until(ws, "input_audio_buffer.committed")
                await send(ws, type="response.create")
                got += await events_until(ws, "response.done")
        return fake, got

    fake, got = asyncio.run(main())
    kinds = [e["type"] for e in got]
    created = [i for i, kind in enumerate(kinds) if kind == "response.created"]
    assert len(created) == 2
    for i in created:
        unknown = got[i + 1]
        assert unknown["type"] == "response.hologram.delta"
        assert unknown["response_id"] == got[i]["response"]["id"]
        assert isinstance(unknown["event_id"], str)
    assert kinds.count("response.hologram.delta") == 2
    assert "response.output_audio.delta" in kinds  # the answers themselves are unchanged
    (record,) = fake.sessions
    assert (record.unknown_sent, record.violations) == (2, [])


def test_gemini_every_server_message_carries_an_unknown_field() -> None:
    async def main() -> tuple[FakeServer, list[dict[str, Any]]]:
        got: list[dict[str, Any]] = []
        async with (
            serve_fake(Dialect.GEMINI.session, DRIFT, "x-goog-api-key") as fake,
            connect(fake.url, additional_headers=GEMINI_HEADERS) as ws,
        ):
            await ws.send(json.dumps(GEMINI_SETUP))
            got.append(json.loads(await ws.recv()))
            await ws.send(json.dumps({"realtimeInput": {"activityStart": {}}}))
            audio = {"mimeType": "audio/pcm;rate=24000", "data": speech(0.3)}
            await ws.send(json.dumps({"realtimeInput": {"audio": audio}}))
            await ws.send(json.dumps({"realtimeInput": {"activityEnd": {}}}))
            async with asyncio.timeout(5):
                while not got[-1].get("serverContent", {}).get("turnComplete"):
                    got.append(json.loads(await ws.recv()))
        return fake, got

    fake, got = asyncio.run(main())
    assert "setupComplete" in got[0]
    assert any("modelTurn" in m.get("serverContent", {}) for m in got)
    note = {"note": "a field this client does not know"}
    assert all(m["serverHologram"] == note for m in got)
    (record,) = fake.sessions
    assert record.unknown_sent == len(got) > 4
    assert record.violations == []


@pytest.mark.parametrize(("retry_after_s", "header"), [(2.0, "2"), (0.25, "0.25")])
def test_every_other_handshake_is_refused_with_429_and_retry_after(
    retry_after_s: float, header: str
) -> None:
    async def main() -> tuple[FakeServer, list[int | str]]:
        outcomes: list[int | str] = []
        behaviour = FakeBehaviour(refuse_every=2, retry_after_s=retry_after_s, fault_sessions=0)
        async with serve_fake(Dialect.OPENAI.session, behaviour) as fake:
            for _ in range(6):
                try:
                    async with connect(fake.url, additional_headers=HEADERS) as ws:
                        outcomes.append(json.loads(await ws.recv())["type"])
                except InvalidStatus as refused:
                    response = refused.response
                    assert response.headers["Retry-After"] == header
                    outcomes.append(response.status_code)
        return fake, outcomes

    fake, outcomes = asyncio.run(main())
    assert outcomes == [429, "session.created"] * 3
    assert fake.refused == 3
    assert [r.session_id for r in fake.sessions] == ["sess_0001", "sess_0002", "sess_0003"]


@pytest.mark.parametrize("dialect", [Dialect.OPENAI, Dialect.XAI])
def test_a_rate_limit_error_comes_after_n_messages_and_the_session_stays_open(
    dialect: Dialect,
) -> None:
    async def session(fake: FakeServer) -> list[dict[str, Any]]:
        """Four ``clear`` messages, each followed by what the fake answered up to ``cleared``."""
        async with connect(fake.url, additional_headers=HEADERS) as ws:
            got = [json.loads(await ws.recv())]  # session.created / conversation.created
            for _ in range(4):
                await send(ws, type="input_audio_buffer.clear")
                got += await events_until(ws, "input_audio_buffer.cleared")
        return got

    async def main() -> tuple[FakeServer, list[list[dict[str, Any]]]]:
        behaviour = FakeBehaviour(rate_limit_after=3, retry_after_s=1.5, fault_sessions=1)
        async with serve_fake(dialect.session, behaviour) as fake:
            # the second session is past fault_sessions: no rate limit
            return fake, [await session(fake), await session(fake)]

    fake, (limited, calm) = asyncio.run(main())
    cleared = "input_audio_buffer.cleared"
    assert [e["type"] for e in limited[1:]] == [cleared] * 3 + ["error", cleared]
    assert [e["type"] for e in calm[1:]] == [cleared] * 4
    error = limited[4]
    assert isinstance(error["event_id"], str)
    assert error["error"] == {
        "type": "rate_limit_error",
        "code": "rate_limit_exceeded",
        "message": "Rate limit reached (injected push-back). Please try again in 1.5s.",
        "param": None,
        "event_id": None,
    }
    assert [len(r.received) for r in fake.sessions] == [4, 4]


def test_gemini_closes_with_1013_after_n_messages() -> None:
    async def main() -> tuple[list[dict[str, Any]], int, str]:
        behaviour = FakeBehaviour(rate_limit_after=2)
        async with (
            serve_fake(Dialect.GEMINI.session, behaviour, "x-goog-api-key") as fake,
            connect(fake.url, additional_headers=GEMINI_HEADERS) as ws,
        ):
            await ws.send(json.dumps(GEMINI_SETUP))
            turn = {"role": "user", "parts": [{"text": "hello"}]}
            await ws.send(json.dumps({"clientContent": {"turns": [turn]}}))
            result = await until_closed(ws)
        assert fake.sessions[0].received == ["setup", "clientContent"]
        return result

    got, code, reason = asyncio.run(main())
    assert [list(m) for m in got] == [["setupComplete"]]
    assert code == 1013
    assert reason == "Rate limit reached (injected push-back). Please try again in 1s."


def test_gemini_says_go_away_then_closes_with_1001() -> None:
    async def main() -> tuple[list[dict[str, Any]], int, str]:
        async with (
            serve_fake(
                Dialect.GEMINI.session, FakeBehaviour(go_away_after=2), "x-goog-api-key"
            ) as fake,
            connect(fake.url, additional_headers=GEMINI_HEADERS) as ws,
        ):
            await ws.send(json.dumps(GEMINI_SETUP))
            await ws.send(json.dumps({"clientContent": {"turns": []}}))
            return await until_closed(ws)

    got, code, reason = asyncio.run(main())
    assert got[1:] == [{"goAway": {"timeLeft": "0s"}}]
    assert "setupComplete" in got[0]
    assert (code, reason) == (1001, "injected push-back: the server is going away")


def test_openai_ignores_go_away_and_keeps_the_error_fault_shape() -> None:
    async def main() -> list[dict[str, Any]]:
        behaviour = FakeBehaviour(go_away_after=1, error_after=2)
        async with (
            serve_fake(Dialect.OPENAI.session, behaviour) as fake,
            connect(fake.url, additional_headers=HEADERS) as ws,
        ):
            got = await events_until(ws, "session.created")
            await send(ws, type="input_audio_buffer.clear")
            got += await events_until(ws, "input_audio_buffer.cleared")
            await send(ws, type="input_audio_buffer.clear")
            got += await events_until(ws, "error")
            await send(ws, type="input_audio_buffer.clear")
            got += await events_until(ws, "input_audio_buffer.cleared")
        assert fake.sessions[0].received == ["input_audio_buffer.clear"] * 3
        return got

    got = asyncio.run(main())
    kinds = [e["type"] for e in got]
    assert kinds == ["session.created"] + ["input_audio_buffer.cleared"] * 2 + ["error"] + [
        "input_audio_buffer.cleared"
    ]
    assert got[3]["error"] == {
        "type": "invalid_request_error",
        "code": "server_error",
        "message": "injected fault: the server had an error",
    }
