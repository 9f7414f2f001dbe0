"""The ``pipecat-websocket`` adapter's hand-written protobuf, checked against Pipecat's own.

Pipecat's ``ProtobufFrameSerializer`` and ``frames_pb2`` are the reference: what pmc sends must
deserialize there to the same audio, and what Pipecat serializes must decode here to the same
events. Odd frames (unknown types and fields, bad bytes) are kept or refused, never guessed.
"""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
from pipecat.frames.frames import (
    InputAudioRawFrame,
    InterruptionFrame,
    OutputAudioRawFrame,
    OutputTransportMessageFrame,
    TextFrame,
    TranscriptionFrame,
)
from pipecat.frames.protobufs import frames_pb2
from pipecat.serializers.protobuf import ProtobufFrameSerializer

from pmc.audio import resample
from pmc.clock import NS_PER_S, VirtualClock
from pmc.systems import (
    UNKNOWN_SIGNAL,
    EventKind,
    SystemAdapter,
    TransportError,
    create_adapter,
    load_card,
)
from tests.systems.conftest import SYSTEMS

ARRIVAL = 7 * NS_PER_S


def adapter() -> SystemAdapter:
    return create_adapter(load_card(SYSTEMS / "pipecat-agent.toml"), VirtualClock())


def decode(a: SystemAdapter, data: bytes, at: int = ARRIVAL) -> list[tuple[EventKind, object]]:
    events = a.decode(at, data)  # type: ignore[attr-defined]
    return [(e.kind, e.text or e.detail or len(e.samples)) for e in events]


def serialize(frame: object) -> bytes:
    data = asyncio.run(ProtobufFrameSerializer().serialize(frame))  # type: ignore[arg-type]
    assert isinstance(data, bytes)
    return data


def tone(n: int, rate: int) -> np.ndarray:
    return (0.5 * np.sin(2 * np.pi * 440 * np.arange(n) / rate)).astype(np.float32)


def test_a_live_frame_is_one_audio_frame_pipecat_reads_at_16_khz() -> None:
    a = adapter()
    sent: list[str | bytes] = []

    async def capture(message: str | bytes, lost: str = "") -> None:
        sent.append(message)

    a.send = capture  # type: ignore[attr-defined]
    frame = tone(480, 24_000)  # 20 ms at the card's 24 kHz
    asyncio.run(a.send_frame(frame))
    assert len(sent) == 1 and isinstance(sent[0], bytes)
    got = asyncio.run(ProtobufFrameSerializer().deserialize(sent[0]))
    assert isinstance(got, InputAudioRawFrame)
    assert (got.sample_rate, got.num_channels, len(got.audio)) == (16_000, 1, 640)
    pcm = np.frombuffer(got.audio, dtype="<i2").astype(np.float32) / 32768.0
    expected = resample(frame, 24_000, 16_000)
    assert np.max(np.abs(pcm - expected)) < 1e-4
    # the raw message is exactly what frames_pb2 makes of the same fields
    reference = frames_pb2.Frame()  # type: ignore[attr-defined]
    reference.audio.audio, reference.audio.sample_rate = got.audio, 16_000
    reference.audio.num_channels = 1
    assert sent[0] == reference.SerializeToString()


def test_the_bot_audio_becomes_24_khz_audio_stamped_on_receipt() -> None:
    a = adapter()
    pcm = (tone(320, 16_000) * 32767).astype("<i2").tobytes()
    events = a.decode(ARRIVAL, serialize(OutputAudioRawFrame(pcm, 16_000, 1)))  # type: ignore[attr-defined]
    assert [(e.kind, e.arrival_ns, len(e.samples)) for e in events] == [
        (EventKind.AUDIO, ARRIVAL, 480)
    ]
    back = resample(np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0, 16_000, 24_000)
    assert np.max(np.abs(events[0].samples - back)) < 1e-6


def test_stereo_audio_is_mixed_down() -> None:
    pcm = np.array([[1000, 3000], [-2000, 0]], dtype="<i2").tobytes()
    events = adapter().decode(ARRIVAL, serialize(OutputAudioRawFrame(pcm, 24_000, 2)))  # type: ignore[attr-defined]
    assert np.allclose(events[0].samples, np.array([2000, -1000]) / 32768.0)


def test_text_transcription_and_message_frames() -> None:
    a = adapter()
    assert decode(a, serialize(TextFrame("Right, I see."))) == [(EventKind.TEXT, "Right, I see.")]
    said = TranscriptionFrame("hello there", "caller-1", "2026-01-01T00:00:00Z")
    assert decode(a, serialize(said)) == [
        (
            EventKind.SIGNAL,
            {
                "event": "transcription",
                "id": said.id,
                "name": said.name,
                "text": "hello there",
                "user_id": "caller-1",
                "timestamp": "2026-01-01T00:00:00Z",
            },
        )
    ]
    rtvi = {"label": "rtvi-ai", "type": "bot-started-speaking"}
    assert decode(a, serialize(OutputTransportMessageFrame(rtvi))) == [
        (EventKind.SIGNAL, {"event": "message", "data": rtvi})
    ]


def test_an_interruption_drops_only_what_has_not_played() -> None:
    a = adapter()
    half_second = (tone(8000, 16_000) * 32767).astype("<i2").tobytes()
    a.decode(ARRIVAL, serialize(OutputAudioRawFrame(half_second, 16_000, 1)))  # type: ignore[attr-defined]
    interruption = InterruptionFrame()
    cut = serialize(interruption)
    signal = {"event": "interruption", "id": interruption.id, "name": interruption.name}
    at = ARRIVAL + NS_PER_S // 5  # 200 ms played, 300 ms queued
    assert decode(a, cut, at) == [
        (EventKind.SIGNAL, signal),
        (EventKind.INTERRUPTED, {"reason": "interruption", "unplayed_ms": 300.0}),
    ]
    # nothing left to drop: a second one is only a signal
    assert decode(a, cut, at + 1) == [(EventKind.SIGNAL, signal)]


def test_unknown_frame_types_and_fields_are_kept_as_unknown_signals() -> None:
    a = adapter()
    # field 9 of Frame (a type pmc does not know), holding an empty message
    ((kind, detail),) = decode(a, bytes([9 << 3 | 2, 0]))
    assert kind is EventKind.SIGNAL and isinstance(detail, dict)
    assert (detail["type"], detail["event"]) == (UNKNOWN_SIGNAL, "frame 9")
    # a TextFrame with a new field 7 (varint 1): the text still counts, the field is named
    text = serialize(TextFrame("hi"))
    inner = text[2:] + bytes([7 << 3, 1])
    events = decode(a, bytes([text[0], len(inner)]) + inner)
    assert events[0] == (EventKind.TEXT, "hi")
    assert events[1][1]["fields"] == ["text.7"]  # type: ignore[index]


@pytest.mark.parametrize(
    ("data", "cause"),
    [
        (b"\x12\x05\x1a\x10ab", "runs past the message"),  # audio longer than the frame
        (b"\x12", "truncated varint"),
        (b"", "empty frame"),
        (b"\x0b", "wire type 3"),
        (b"\x12\x04\x1a\x01a\x20", "truncated varint"),
        (b"\x12\x05\x1a\x01a\x20\x10", "not whole"),  # one byte of PCM16 at 16 kHz
        (b"\x12\x03\x1a\x01\xff", "without a sample rate"),
        (b"\x0a\x03\x1a\x01\xff", "not UTF-8"),  # text that is not UTF-8
        (b"\x22\x03\x0a\x01{", "not JSON"),
    ],
)
def test_malformed_bytes_are_a_transport_error_with_the_cause(data: bytes, cause: str) -> None:
    with pytest.raises(TransportError, match=cause):
        adapter().decode(ARRIVAL, data)  # type: ignore[attr-defined]


def test_a_text_message_is_a_transport_error() -> None:
    with pytest.raises(TransportError, match="binary protobuf"):
        adapter().decode(ARRIVAL, json.dumps({"event": "media"}))  # type: ignore[attr-defined]
