"""The fakes hold clients to their dialect, as the real APIs do (raw websocket clients here)."""

import asyncio
import base64
import json
from typing import Any

import numpy as np
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosedError, InvalidStatus

from pmc.testing.hosted import Dialect, FakeBehaviour, FakeServer, serve_fake

HEADERS = {"Authorization": "Bearer k"}
XAI_SESSION = {
    "voice": "eve",
    "instructions": "",
    "turn_detection": {"type": None},
    "audio": {"input": {"format": {"type": "audio/pcm", "rate": 24000}}},
}


def speech(seconds: float) -> str:
    """Loud noise as base64 PCM16 at 24 kHz."""
    rng = np.random.default_rng(1)
    pcm = (rng.uniform(-0.3, 0.3, round(seconds * 24000)) * 32767).astype("<i2")
    return base64.b64encode(pcm.tobytes()).decode()


async def events_until(
    ws: ClientConnection, last: str, seconds: float = 5.0
) -> list[dict[str, Any]]:
    """Server events up to and including the first of type ``last``."""
    out: list[dict[str, Any]] = []
    async with asyncio.timeout(seconds):
        while not out or out[-1].get("type") != last:
            out.append(json.loads(await ws.recv()))
    return out


async def send(ws: ClientConnection, **event: Any) -> None:
    await ws.send(json.dumps(event))


def test_xai_answers_a_response_requested_before_committed_in_text_only() -> None:
    """The failure the paper's corrected protocol avoids: commit and response.create at once."""

    async def main() -> FakeServer:
        behaviour = FakeBehaviour(reply_text="Right.", latency_ms=0)
        async with (
            serve_fake(Dialect.XAI.session, behaviour) as fake,
            connect(fake.url, additional_headers=HEADERS) as ws,
        ):
            await send(ws, type="session.update", session=XAI_SESSION)
            await send(ws, type="input_audio_buffer.append", audio=speech(0.5))
            await send(ws, type="input_audio_buffer.commit")
            await send(ws, type="response.create")
            got = await events_until(ws, "response.done")
        kinds = [e["type"] for e in got]
        assert kinds[0] == "conversation.created"
        assert "response.output_text.delta" in kinds
        assert not any("audio" in k for k in kinds if k.startswith("response."))
        return fake

    fake = asyncio.run(main())
    (answer,) = fake.sessions[0].answers
    assert answer.text_only


@pytest.mark.parametrize(
    ("dialect", "events", "problem"),
    [
        (
            Dialect.XAI,
            [{"type": "session.update", "session": {**XAI_SESSION, "turn_detection": None}}],
            'switch it off with {"type": null}',
        ),
        (
            Dialect.XAI,
            [{"type": "session.update", "session": {**XAI_SESSION, "type": "realtime"}}],
            "unknown session field(s) for xAI: type",
        ),
        (
            Dialect.OPENAI,
            [
                {"type": "input_audio_buffer.append", "audio": speech(0.05)},
                {"type": "input_audio_buffer.commit"},
            ],
            "buffer too small. Expected at least 100ms of audio",
        ),
        (
            Dialect.OPENAI,
            [
                {
                    "type": "conversation.item.create",
                    "item": {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "text", "text": "beta shape"}],
                    },
                }
            ],
            "assistant content must be output_text or output_audio parts",
        ),
        (
            Dialect.OPENAI,
            [
                {
                    "type": "conversation.item.create",
                    "item": {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_audio", "audio": "not base64!"}],
                    },
                }
            ],
            "a input_audio part needs base64 PCM16 audio",
        ),
        (Dialect.OPENAI, [{"type": "response.hologram"}], "unknown client event"),
        (
            Dialect.OPENAI,
            [
                {
                    "type": "session.update",
                    "session": {
                        "type": "realtime",
                        "audio": {"input": {"format": {"type": "audio/pcm", "rate": 16000}}},
                    },
                }
            ],
            "only 24 kHz audio/pcm is supported",
        ),
    ],
    ids=[
        "xai-null-detection",
        "xai-ga-shape",
        "empty-commit",
        "beta-item",
        "bad-audio-item",
        "unknown",
        "rate",
    ],
)
def test_malformed_client_events_get_an_error_event_and_are_recorded(
    dialect: Dialect, events: list[dict[str, Any]], problem: str
) -> None:
    async def main() -> tuple[FakeServer, list[dict[str, Any]]]:
        async with (
            serve_fake(dialect.session) as fake,
            connect(fake.url, additional_headers=HEADERS) as ws,
        ):
            for event in events:
                await send(ws, **event)
            got = await events_until(ws, "error")
        return fake, got

    fake, got = asyncio.run(main())
    assert problem in got[-1]["error"]["message"]
    assert any(problem in v for v in fake.sessions[0].violations)


def test_gemini_closes_on_a_message_before_setup() -> None:
    async def main() -> FakeServer:
        async with (
            serve_fake(Dialect.GEMINI.session, auth_header="x-goog-api-key") as fake,
            connect(fake.url, additional_headers={"x-goog-api-key": "k"}) as ws,
        ):
            audio = {"mimeType": "audio/pcm;rate=16000", "data": speech(0.1)}
            await ws.send(json.dumps({"realtimeInput": {"audio": audio}}))
            with pytest.raises(ConnectionClosedError) as closed:
                await ws.recv()
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1007
        return fake

    fake = asyncio.run(main())
    assert fake.sessions[0].violations == ["setup must be the first message, and only the first"]


def test_a_missing_key_or_a_key_in_the_url_is_refused() -> None:
    async def main() -> list[int]:
        codes = []
        async with serve_fake(Dialect.OPENAI.session) as fake:
            for url, headers in ((fake.url, {}), (fake.url + "&key=k", HEADERS)):
                with pytest.raises(InvalidStatus) as refused:
                    async with connect(url, additional_headers=headers):
                        pass
                codes.append(refused.value.response.status_code)
        return codes

    assert asyncio.run(main()) == [401, 400]
