"""One fake phone agent's call: checks what the caller (pmc, as Twilio) sends, answers, barges in.

The stream clock is the hosted fakes' (:mod:`pmc.testing.hosted`): the ``k``-th inbound
sample is at ``k / 8000`` s, and the stream's origin on the fake's clock is the earliest
``arrival - k / 8000`` over the chunks received (a late chunk only makes its own estimate
later). An answer due at stream time ``t`` is sent at ``origin + t``, so the instant the fake
records for its first audio is where pmc plays it, within the loopback's delay.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from pmc.audio import SAMPLE_RATE, mulaw_decode, mulaw_encode, resample, to_pcm16
from pmc.clock import NS_PER_S
from pmc.testing.hosted import EnergyEndpointer, answer_audio
from pmc.testing.hosted._deadline import sleep_until

RATE = 8_000
CHUNK_BYTES = 160
"""What Twilio sends: 20 ms of 8 kHz mu-law per ``media``."""
PIECE_BYTES = 320
"""What the agent sends: 40 ms pieces, paced in real time (as a Pipecat bot does)."""
MEDIA_FORMAT = {"encoding": "audio/x-mulaw", "sampleRate": RATE, "channels": 1}


@dataclass(frozen=True)
class AgentBehaviour:
    """How the fake agent behaves; the faults apply to the first ``fault_sessions`` calls.

    Attributes:
        latency_ms: From the end of the caller's speech to the answer's first sample.
        silence_ms: Silence that ends the caller's turn (the energy endpointer's).
        reply_text: What the answer says (the bundled voice).
        barge_in: Whether the caller speaking over an answer stops it (``clear``).
        marks: Send a ``mark`` after each answer.
        refuse: Refuse the handshake (HTTP 403).
        close_after: Drop the connection after this many caller messages.
        malformed_after: Send a message that is not JSON after this many caller messages.
        unknown_after: Send an event Twilio does not have after this many caller messages.
        hang: Never read ``start``: the call hangs after ``connected``.
        fault_sessions: How many calls the faults apply to (None: all).
    """

    latency_ms: float = 200.0
    silence_ms: float = 300.0
    reply_text: str = "Right, I see. Let me check that for you."
    barge_in: bool = True
    marks: bool = True
    refuse: bool = False
    close_after: int | None = None
    malformed_after: int | None = None
    unknown_after: int | None = None
    hang: bool = False
    fault_sessions: int | None = None

    def without_faults(self) -> AgentBehaviour:
        """The same agent, with no fault."""
        return AgentBehaviour(
            self.latency_ms, self.silence_ms, self.reply_text, self.barge_in, self.marks
        )


@dataclass
class CallRecord:
    """What one call did, on its stream clock (seconds).

    Attributes:
        call: The call's number at the fake (1, 2...).
        problems: Every way the caller broke the protocol (empty for a conforming caller).
        chunks: Inbound ``media`` chunks received.
        turn_ends_s: Where the endpointer heard each caller turn end (end of its speech).
        onsets_s: When each answer's first audio left.
        clears_s: When each ``clear`` was sent (barge-in).
        marks_echoed: The names of the marks the caller echoed back.
        stopped: The caller sent ``stop``.
    """

    call: int
    problems: list[str] = field(default_factory=list)
    chunks: int = 0
    turn_ends_s: list[float] = field(default_factory=list)
    onsets_s: list[float] = field(default_factory=list)
    clears_s: list[float] = field(default_factory=list)
    marks_echoed: list[str] = field(default_factory=list)
    stopped: bool = False


class AgentCall:
    """One websocket call to the fake agent."""

    def __init__(self, ws: ServerConnection, behaviour: AgentBehaviour, record: CallRecord) -> None:
        self.ws = ws
        self.behaviour = behaviour
        self.record = record
        self.endpointer = EnergyEndpointer(RATE, behaviour.silence_ms)
        self.samples = 0
        self.origin_ns: int | None = None
        self.sequence = 0
        self.stream_sid = ""
        self.answer: asyncio.Task[None] | None = None
        self.playing_until_s = 0.0
        """Where the caller's playback of the answers ends (stream clock)."""
        self.messages = 0

    def now_s(self) -> float:
        """The stream clock now."""
        return (time.monotonic_ns() - (self.origin_ns or time.monotonic_ns())) / NS_PER_S

    def problem(self, what: str) -> None:
        self.record.problems.append(what)

    async def run(self) -> None:
        """Serve the call until the caller hangs up (or a fault ends it)."""
        try:
            async for raw in self.ws:
                self.messages += 1
                if await self._fault():
                    return
                self._check(raw)
        except ConnectionClosed:
            pass
        finally:
            if self.answer is not None:
                self.answer.cancel()

    async def _fault(self) -> bool:
        """Inject the behaviour's fault at its message count; True when the call is over."""
        b, n = self.behaviour, self.messages
        if b.hang and n >= 1:
            await self.ws.wait_closed()  # never reads another message
            return True
        if b.close_after is not None and n >= b.close_after:
            self.ws.transport.abort()  # no closing handshake
            return True
        if b.malformed_after is not None and n == b.malformed_after:
            await self.ws.send("{not json")
        if b.unknown_after is not None and n == b.unknown_after:
            await self.send({"event": "transcript", "streamSid": self.stream_sid, "text": "hi"})
        return False

    def _check(self, raw: str | bytes) -> None:
        try:
            message = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            self.problem(f"message {self.messages} is not JSON")
            return
        event = message.get("event")
        if self.messages == 1:
            if message != {"event": "connected", "protocol": "Call", "version": "1.0.0"}:
                self.problem(f"first message is not connected: {message}")
            return
        self.sequence += 1
        if message.get("sequenceNumber") != str(self.sequence):
            self.problem(f"sequenceNumber {message.get('sequenceNumber')} != {self.sequence}")
        if self.messages == 2:
            self._start(message)
        elif event == "media":
            self._media(message)
        elif event == "mark":
            self.record.marks_echoed.append(str(message.get("mark", {}).get("name")))
        elif event == "stop":
            self.record.stopped = True
        else:
            self.problem(f"unexpected event {event!r}")

    def _start(self, message: dict[str, Any]) -> None:
        start = message.get("start", {})
        self.stream_sid = str(message.get("streamSid", ""))
        if message.get("event") != "start" or start.get("streamSid") != self.stream_sid:
            self.problem(f"second message is not start: {message}")
        if start.get("mediaFormat") != MEDIA_FORMAT or start.get("tracks") != ["inbound"]:
            self.problem(f"start has the wrong format: {start}")

    def _media(self, message: dict[str, Any]) -> None:
        arrival = time.monotonic_ns()
        media = message.get("media", {})
        raw = base64.b64decode(media.get("payload", ""))
        self.record.chunks += 1
        expected = {"track": "inbound", "chunk": str(self.record.chunks)}
        if {k: media.get(k) for k in expected} != expected or len(raw) != CHUNK_BYTES:
            self.problem(f"media chunk {self.record.chunks} is malformed: {len(raw)} bytes")
        if media.get("timestamp") != str((self.record.chunks - 1) * 20):
            self.problem(f"media chunk {self.record.chunks} has timestamp {media.get('timestamp')}")
        self.samples += len(raw)
        origin = arrival - self.samples * NS_PER_S // RATE
        self.origin_ns = origin if self.origin_ns is None else min(self.origin_ns, origin)
        audio = mulaw_decode(np.frombuffer(raw, dtype=np.uint8)).astype(np.float32) / 32768.0
        for event in self.endpointer.push(audio):
            if event.change == "started":
                self._caller_started()
            else:
                self._turn_ended(event.at / RATE)

    def _caller_started(self) -> None:
        """The caller speaks: over an answer still playing, that is a barge-in."""
        if not self.behaviour.barge_in or self.answer is None:
            return
        if self.answer.done() and self.playing_until_s <= self.now_s():
            return
        self.answer.cancel()
        self.record.clears_s.append(self.now_s())
        self.playing_until_s = self.now_s()
        self.spawn(self.send({"event": "clear", "streamSid": self.stream_sid}))

    def _turn_ended(self, at_s: float) -> None:
        self.record.turn_ends_s.append(at_s)
        if self.answer is not None and not self.answer.done():
            return
        self.answer = asyncio.get_running_loop().create_task(
            self._speak(at_s + self.behaviour.latency_ms / 1000)
        )

    def spawn(self, work: Any) -> None:
        asyncio.get_running_loop().create_task(work)

    async def _speak(self, due_s: float) -> None:
        """The answer as 40 ms mu-law pieces, paced in real time from ``due_s``."""
        wire = resample(answer_audio(self.behaviour.reply_text), SAMPLE_RATE, RATE)
        data = mulaw_encode(to_pcm16(wire)).tobytes()
        assert self.origin_ns is not None
        start_ns = self.origin_ns + round(due_s * NS_PER_S)
        for k, at in enumerate(range(0, len(data), PIECE_BYTES)):
            await sleep_until(start_ns + k * PIECE_BYTES * NS_PER_S // RATE)
            if k == 0:
                self.record.onsets_s.append(self.now_s())
                self.playing_until_s = self.now_s()
            piece = base64.b64encode(data[at : at + PIECE_BYTES]).decode("ascii")
            await self.send(
                {"event": "media", "streamSid": self.stream_sid, "media": {"payload": piece}}
            )
            self.playing_until_s = (
                max(self.playing_until_s, self.now_s()) + min(PIECE_BYTES, len(data) - at) / RATE
            )
        if self.behaviour.marks:
            name = f"answer-{len(self.record.onsets_s)}"
            await self.send({"event": "mark", "streamSid": self.stream_sid, "mark": {"name": name}})

    async def send(self, message: dict[str, Any]) -> None:
        """Send one agent message (a caller that hung up is not an error)."""
        with contextlib.suppress(ConnectionClosed):
            await self.ws.send(json.dumps(message))
