"""The two wires the fake agent speaks: Twilio Media Streams and Pipecat's protobuf frames.

A wire reads each caller message (checking it against the protocol, every departure a problem
in the call's record) into the caller's audio, and writes the agent's messages. Pipecat's frames
are read and written with Pipecat's own ``frames_pb2``, never with the code under test, so a
mistake in pmc's hand-written protobuf cannot cancel out here.
"""

from __future__ import annotations

import base64
import json
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np

from pmc.audio import FloatArray, mulaw_decode, mulaw_encode
from pmc.testing.pipecat_bot import Wire

PIECE_S = 0.04
"""What the agent sends: 40 ms pieces, paced in real time (as a Pipecat bot does)."""
Message = str | bytes


class AgentWire(ABC):
    """One call's codec; ``problems`` collects every way the caller broke the protocol."""

    RATE: int
    """The wire's audio rate, both ways."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        self.messages = 0
        self.chunks = 0
        """Caller audio messages read."""
        self.stopped = False
        self.marks_echoed: list[str] = []

    @abstractmethod
    def read(self, raw: Message) -> FloatArray | None:
        """The caller's audio in one message (None for one that carries none)."""

    @abstractmethod
    def audio(self, pcm16: np.ndarray) -> Message:
        """One piece of the agent's speech."""

    @abstractmethod
    def clear(self) -> Message:
        """The agent stopped its own speech (barge-in): drop what has not played."""

    def mark(self, name: str) -> Message | None:
        """A mark after an answer, where the wire has them."""
        return None

    @abstractmethod
    def malformed(self) -> Message:
        """A message the caller cannot read."""

    @abstractmethod
    def unknown(self) -> Message:
        """A well-formed message of a kind the protocol does not have."""


class TwilioWire(AgentWire):
    """Twilio Media Streams: JSON text, 8 kHz mu-law in 20 ms ``media`` chunks from the caller."""

    RATE = 8_000
    CHUNK_BYTES = 160
    MEDIA_FORMAT: ClassVar[dict[str, Any]] = {
        "encoding": "audio/x-mulaw",
        "sampleRate": RATE,
        "channels": 1,
    }

    def __init__(self, problems: list[str]) -> None:
        super().__init__(problems)
        self.sequence = 0
        self.stream_sid = ""

    def read(self, raw: Message) -> FloatArray | None:
        self.messages += 1
        try:
            message = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            self.problems.append(f"message {self.messages} is not JSON")
            return None
        event = message.get("event")
        if self.messages == 1:
            if message != {"event": "connected", "protocol": "Call", "version": "1.0.0"}:
                self.problems.append(f"first message is not connected: {message}")
            return None
        self.sequence += 1
        if message.get("sequenceNumber") != str(self.sequence):
            self.problems.append(
                f"sequenceNumber {message.get('sequenceNumber')} != {self.sequence}"
            )
        if self.messages == 2:
            self._start(message)
        elif event == "media":
            return self._media(message)
        elif event == "mark":
            self.marks_echoed.append(str(message.get("mark", {}).get("name")))
        elif event == "stop":
            self.stopped = True
        else:
            self.problems.append(f"unexpected event {event!r}")
        return None

    def _start(self, message: dict[str, Any]) -> None:
        start = message.get("start", {})
        self.stream_sid = str(message.get("streamSid", ""))
        if message.get("event") != "start" or start.get("streamSid") != self.stream_sid:
            self.problems.append(f"second message is not start: {message}")
        if start.get("mediaFormat") != self.MEDIA_FORMAT or start.get("tracks") != ["inbound"]:
            self.problems.append(f"start has the wrong format: {start}")

    def _media(self, message: dict[str, Any]) -> FloatArray:
        media = message.get("media", {})
        raw = base64.b64decode(media.get("payload", ""))
        self.chunks += 1
        expected = {"track": "inbound", "chunk": str(self.chunks)}
        if {k: media.get(k) for k in expected} != expected or len(raw) != self.CHUNK_BYTES:
            self.problems.append(f"media chunk {self.chunks} is malformed: {len(raw)} bytes")
        stamp = media.get("timestamp")
        if stamp != str((self.chunks - 1) * 20):
            self.problems.append(f"media chunk {self.chunks} has timestamp {stamp}")
        pcm = mulaw_decode(np.frombuffer(raw, dtype=np.uint8))
        return pcm.astype(np.float32) / 32768.0

    def _send(self, message: dict[str, Any]) -> str:
        return json.dumps({**message, "streamSid": self.stream_sid})

    def audio(self, pcm16: np.ndarray) -> Message:
        payload = base64.b64encode(mulaw_encode(pcm16).tobytes()).decode("ascii")
        return self._send({"event": "media", "media": {"payload": payload}})

    def clear(self) -> Message:
        return self._send({"event": "clear"})

    def mark(self, name: str) -> Message | None:
        return self._send({"event": "mark", "mark": {"name": name}})

    def malformed(self) -> Message:
        return "{not json"

    def unknown(self) -> Message:
        return self._send({"event": "transcript", "text": "hi"})


class ProtobufWire(AgentWire):
    """Pipecat's ``ProtobufFrameSerializer``: one binary ``Frame`` per message, 16 kHz PCM16.

    The caller sends one ``AudioRawFrame`` per 20 ms frame; the agent answers with audio frames
    and an ``InterruptionFrame`` on barge-in (Pipecat's websocket output transport's own).
    """

    RATE = 16_000
    FRAME_BYTES = RATE * 20 // 1000 * 2
    UNKNOWN_TYPE = 9
    """A ``Frame`` oneof field ``frames.proto`` does not define."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(problems)
        try:
            from pipecat.frames.protobufs import frames_pb2
        except ImportError as exc:
            raise RuntimeError(
                "the fake agent's protobuf wire reads Pipecat's own frames: "
                "pip install 'pmc[pipecat]'"
            ) from exc
        self.pb: Any = frames_pb2  # generated code: no types to check against

    def read(self, raw: Message) -> FloatArray | None:
        self.messages += 1
        if isinstance(raw, str):
            self.problems.append(f"message {self.messages} is text, not a protobuf frame")
            return None
        frame = self.pb.Frame()
        try:
            frame.ParseFromString(raw)
        except Exception as exc:  # protobuf's DecodeError, whatever its module
            self.problems.append(f"message {self.messages} is not a Frame: {exc}")
            return None
        if frame.WhichOneof("frame") != "audio":
            self.problems.append(f"message {self.messages} is {frame.WhichOneof('frame')}")
            return None
        audio = frame.audio
        self.chunks += 1
        if (audio.sample_rate, audio.num_channels) != (self.RATE, 1):
            self.problems.append(
                f"audio frame {self.chunks}: {audio.sample_rate} Hz, {audio.num_channels} ch"
            )
        if len(audio.audio) != self.FRAME_BYTES:
            self.problems.append(f"audio frame {self.chunks} has {len(audio.audio)} bytes")
        return np.frombuffer(audio.audio, dtype="<i2").astype(np.float32) / 32768.0

    def audio(self, pcm16: np.ndarray) -> Message:
        frame = self.pb.Frame()
        frame.audio.audio = pcm16.astype("<i2").tobytes()
        frame.audio.sample_rate = self.RATE
        frame.audio.num_channels = 1
        return bytes(frame.SerializeToString())

    def clear(self) -> Message:
        frame = self.pb.Frame()
        frame.interruption.SetInParent()
        return bytes(frame.SerializeToString())

    def malformed(self) -> Message:
        return b"\x12\x05\x1a"  # field 2 (audio) says five bytes follow; one does

    def unknown(self) -> Message:
        return bytes([self.UNKNOWN_TYPE << 3 | 2, 2, 0x08, 0x01])  # field 9: {1: 1}


WIRES: dict[Wire, type[AgentWire]] = {Wire.TWILIO: TwilioWire, Wire.PROTOBUF: ProtobufWire}
