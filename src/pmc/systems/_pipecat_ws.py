"""A Pipecat bot over Pipecat's own websocket protocol: one protobuf ``Frame`` per message.

Pipecat bots served with its websocket transports and ``ProtobufFrameSerializer`` exchange
binary messages, each a ``pipecat.Frame`` (``frames.proto``, docs/wire-formats.md section 8): a
oneof of ``TextFrame``, ``AudioRawFrame`` (PCM16 bytes, sample rate, channels),
``TranscriptionFrame``, ``MessageFrame`` (JSON) and ``InterruptionFrame``. The few fields are
encoded and decoded here by hand, so pmc depends on neither Pipecat nor ``protobuf``. The bot
hears the live audio only and finds the end of the turn itself (family ``duplex``, as a phone
agent). Its websocket output transport forwards audio, transport messages and interruptions,
never its words, so the stop rules go by speech alone (``SENDS_TEXT = False``); a ``TextFrame``
that does come is still a text event.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from pmc.audio import FloatArray, resample, to_pcm16
from pmc.clock import NS_PER_S, Clock
from pmc.systems._adapter import (
    EventKind,
    Preload,
    SystemEvent,
    playback_cut,
    register_adapter,
    unknown_signal,
)
from pmc.systems._card import SystemCard
from pmc.systems._websocket import WebsocketAdapter

WIRE_RATE = 16_000
"""The rate pmc sends at unless the card's ``params.wire_rate`` says (Pipecat bots' usual)."""

VARINT, I64, LEN, I32 = 0, 1, 2, 5
"""Protobuf wire types (3 and 4, groups, are not used by proto3 and are refused)."""
FRAMES = {1: "text", 2: "audio", 3: "transcription", 4: "message", 5: "interruption"}
"""``Frame``'s oneof: field number to the name ``frames.proto`` gives it."""
_ID_NAME = {1: ("id", VARINT), 2: ("name", LEN)}
FIELDS: dict[str, dict[int, tuple[str, int]]] = {
    "text": _ID_NAME | {3: ("text", LEN)},
    "audio": _ID_NAME
    | {
        3: ("audio", LEN),
        4: ("sample_rate", VARINT),
        5: ("num_channels", VARINT),
        6: ("pts", VARINT),
    },
    "transcription": _ID_NAME | {3: ("text", LEN), 4: ("user_id", LEN), 5: ("timestamp", LEN)},
    "message": {1: ("data", LEN)},
    "interruption": dict(_ID_NAME),
}
"""Each frame type's fields: number to (name, wire type); LEN fields other than ``audio`` are
UTF-8 strings."""

Field = tuple[int, int, int | bytes]
"""One decoded field: its number, its wire type, and an integer or the bytes it carries."""


class Malformed(ValueError):
    """Bytes that are not a protobuf message of the expected shape."""


# -- the wire format ------------------------------------------------------------------------


def varint(value: int) -> bytes:
    """``value`` (unsigned, under 2**64) as a protobuf base-128 varint."""
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _tag(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


def _read_varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data):
            raise Malformed("truncated varint")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7
        if shift >= 70:
            raise Malformed("varint longer than 10 bytes")


def read_fields(data: bytes) -> list[Field]:
    """Every field of one protobuf message, in wire order."""
    fields: list[Field] = []
    at = 0
    while at < len(data):
        key, at = _read_varint(data, at)
        number, wire_type = key >> 3, key & 7
        if number == 0:
            raise Malformed("field number 0")
        value: int | bytes
        if wire_type == VARINT:
            value, at = _read_varint(data, at)
        elif wire_type in (I64, I32):
            size = 8 if wire_type == I64 else 4
            if at + size > len(data):
                raise Malformed(f"truncated fixed field {number}")
            value, at = int.from_bytes(data[at : at + size], "little"), at + size
        elif wire_type == LEN:
            size, at = _read_varint(data, at)
            if at + size > len(data):
                raise Malformed(f"field {number} runs past the message")
            value, at = data[at : at + size], at + size
        else:
            raise Malformed(f"wire type {wire_type} in field {number}")
        fields.append((number, wire_type, value))
    return fields


def encode_audio(pcm: bytes, sample_rate: int, num_channels: int = 1) -> bytes:
    """A ``Frame`` holding one ``AudioRawFrame`` (PCM16 little-endian)."""
    inner = (
        _tag(3, LEN)
        + varint(len(pcm))
        + pcm
        + _tag(4, VARINT)
        + varint(sample_rate)
        + _tag(5, VARINT)
        + varint(num_channels)
    )
    return _tag(2, LEN) + varint(len(inner)) + inner


def decode_frame(data: bytes) -> tuple[str | None, dict[str, Any], list[str]]:
    """One ``Frame``: its type's name, its known fields and the names of those it did not know.

    The type is None for one pmc does not know, and its detail is ``{"field": number,
    "wire_type": t, "bytes": size}``; ``audio`` stays bytes, strings are decoded. A oneof sent
    more than once keeps the last, as protobuf does.
    """
    outer = read_fields(data)
    if not outer:
        raise Malformed("empty frame (no type)")
    number, wire_type, value = outer[-1]
    kind = FRAMES.get(number)
    if kind is None:
        size = len(value) if isinstance(value, bytes) else 0
        return None, {"field": number, "wire_type": wire_type, "bytes": size}, []
    if not isinstance(value, bytes):
        raise Malformed(f"frame type {kind} is not length-delimited")
    known = FIELDS[kind]
    fields: dict[str, Any] = {}
    unknown: list[str] = []
    for inner_number, inner_type, inner_value in read_fields(value):
        if inner_number not in known:
            unknown.append(f"{kind}.{inner_number}")
            continue
        name, expected = known[inner_number]
        if inner_type != expected:
            raise Malformed(f"{kind}.{name} has wire type {inner_type}")
        if isinstance(inner_value, bytes) and name != "audio":
            try:
                fields[name] = inner_value.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise Malformed(f"{kind}.{name} is not UTF-8 ({exc})") from None
        else:
            fields[name] = inner_value
    return kind, fields, unknown


# -- the adapter ----------------------------------------------------------------------------


@dataclass(frozen=True)
class PipecatParams:
    """A Pipecat websocket card's ``[params]``."""

    wire_rate: int = WIRE_RATE
    """The rate of the audio frames on the wire."""


@register_adapter("pipecat-websocket")
class PipecatWebsocket(WebsocketAdapter):
    """The client's side of a Pipecat websocket bot: ``AudioRawFrame`` out, its frames back.

    Input frames are resampled one by one from the card's rate to the wire rate (no hold-back,
    as :class:`~pmc.systems._twilio.TwilioMediaStreams` does); the bot's audio is resampled per
    message to the card's rate. Pipecat's output transport sends audio ahead of real time, so
    an ``InterruptionFrame`` drops what pmc's playback clock has not yet played.
    """

    VERSION = "1"
    SENDS_TEXT = False  # Pipecat's websocket output transport never forwards the bot's words
    PARAMS: ClassVar[type[Any]] = PipecatParams
    params: PipecatParams

    def __init__(self, card: SystemCard, clock: Clock) -> None:
        super().__init__(card, clock)
        self.wire_rate = self.params.wire_rate
        self._playing_until_ns = 0
        """Where the bot's queued audio ends on the harness clock (as the trace plays it)."""

    async def preload(self, preload: Preload) -> None:
        """Nothing to preload: the bot hears the live audio only."""

    async def send_frame(self, samples: FloatArray) -> None:
        """One live frame as one ``AudioRawFrame`` of PCM16 at the wire rate."""
        wire = resample(samples, self.card.sample_rate, self.wire_rate)
        pcm = to_pcm16(wire).astype("<i2", copy=False).tobytes()
        await self.send(encode_audio(pcm, self.wire_rate))

    async def end_of_input(self) -> None:
        """Nothing to signal: the bot finds the end of the turn itself.

        Never called for this card: the ``duplex`` family gets silence frames instead.
        """

    def decode(self, arrival_ns: int, message: str | bytes) -> list[SystemEvent]:
        """One ``Frame`` as events; bytes that are not one are a transport error."""
        if isinstance(message, str):
            raise self.fail("text message from the bot (the protocol is binary protobuf)")
        try:
            kind, fields, unknown = decode_frame(message)
            events = self._events(arrival_ns, kind, fields)
        except Malformed as exc:
            raise self.fail(f"malformed frame from the bot ({exc})") from None
        if unknown:
            detail = {key: value for key, value in fields.items() if key != "audio"}
            events.append(unknown_signal(arrival_ns, {"event": kind, **detail}, fields=unknown))
        return events

    def _events(
        self, arrival_ns: int, kind: str | None, fields: dict[str, Any]
    ) -> list[SystemEvent]:
        if kind is None:
            return [unknown_signal(arrival_ns, fields, event=f"frame {fields['field']}")]
        if kind == "audio":
            return self._audio(arrival_ns, fields)
        if kind == "text":
            return [SystemEvent(EventKind.TEXT, arrival_ns, text=fields.get("text", ""))]
        if kind == "message":
            return [self._message(arrival_ns, fields.get("data", ""))]
        if kind == "interruption":
            return self._interruption(arrival_ns, fields)
        return [SystemEvent(EventKind.SIGNAL, arrival_ns, detail={"event": kind, **fields})]

    def _audio(self, arrival_ns: int, fields: dict[str, Any]) -> list[SystemEvent]:
        raw: bytes = fields.get("audio", b"")
        rate = int(fields.get("sample_rate", 0))
        channels = int(fields.get("num_channels", 0)) or 1  # proto3 drops a zero: mono
        if not raw:
            return []
        if rate <= 0:
            raise Malformed("audio without a sample rate")
        if len(raw) % (2 * channels):
            raise Malformed(f"{len(raw)} audio bytes are not whole {channels}-channel samples")
        pcm = np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0
        mono = pcm.reshape(-1, channels).mean(axis=1) if channels > 1 else pcm
        start = max(arrival_ns, self._playing_until_ns)
        self._playing_until_ns = start + len(mono) * NS_PER_S // rate
        samples = resample(mono, rate, self.card.sample_rate)
        return [SystemEvent(EventKind.AUDIO, arrival_ns, samples)]

    def _message(self, arrival_ns: int, data: str) -> SystemEvent:
        try:
            parsed = json.loads(data)
        except json.JSONDecodeError as exc:
            raise Malformed(f"message frame is not JSON ({exc})") from None
        return SystemEvent(
            EventKind.SIGNAL, arrival_ns, detail={"event": "message", "data": parsed}
        )

    def _interruption(self, arrival_ns: int, fields: dict[str, Any]) -> list[SystemEvent]:
        """Drop what has not played, as the bot's own client would."""
        events = [
            SystemEvent(EventKind.SIGNAL, arrival_ns, detail={"event": "interruption", **fields})
        ]
        stop = playback_cut(arrival_ns, self._playing_until_ns, "interruption")
        if stop is not None:
            self._playing_until_ns = arrival_ns
            events.append(stop)
        return events
