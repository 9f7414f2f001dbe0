"""One fake agent's call: checks what the caller (pmc) sends, answers, barges in.

The wire (:mod:`pmc.testing.agent._wires`) reads and writes the messages; this is the agent.
The stream clock is the hosted fakes' (:mod:`pmc.testing.hosted`): the ``k``-th inbound
sample is at ``k / rate`` s, and the stream's origin on the fake's clock is the earliest
``arrival - k / rate`` over the chunks received (a late chunk only makes its own estimate
later). An answer due at stream time ``t`` is sent at ``origin + t``, so the instant the fake
records for its first audio is where pmc plays it, within the loopback's delay.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from pmc.audio import SAMPLE_RATE, resample, to_pcm16
from pmc.clock import NS_PER_S
from pmc.testing.agent._wires import PIECE_S, AgentWire, Message
from pmc.testing.hosted import EnergyEndpointer, answer_audio
from pmc.testing.hosted._deadline import sleep_until

AHEAD_PIECES = 3
"""The agent's answer runs 120 ms ahead of its playback, as a voice agent's speech does
(Pipecat's transport sends audio as its TTS makes it, and the telephony side buffers): a barge-in
``clear`` then always drops audio that had not played yet. Sent exactly in real time, a clear
the agent's loop sent a few ms late found everything played, and stopped nothing."""


@dataclass(frozen=True)
class AgentBehaviour:
    """How the fake agent behaves; the faults apply to the first ``fault_sessions`` calls.

    Attributes:
        latency_ms: From the end of the caller's speech to the answer's first sample.
        silence_ms: Silence that ends the caller's turn (the energy endpointer's).
        reply_text: What the answer says (the bundled voice).
        barge_in: Whether the caller speaking over an answer stops it (``clear``).
        yield_ms: How long after the caller's speech over an answer began (its first sample,
            :attr:`CallRecord.heard_s`) the agent stops the answer (0: when its endpointer
            decides).
        marks: Send a ``mark`` after each answer (where the wire has marks).
        refuse: Refuse the handshake (HTTP 403).
        stall_s: Hold the opening handshake this long before answering it.
        close_after: Drop the connection after this many caller messages.
        malformed_after: Send a message the caller cannot read after this many caller messages.
        unknown_after: Send a kind of message the protocol does not have after this many.
        fault_sessions: How many calls the faults apply to (None: all).
    """

    latency_ms: float = 200.0
    silence_ms: float = 300.0
    reply_text: str = "Right, I see. Let me check that for you."
    barge_in: bool = True
    marks: bool = True
    yield_ms: float = 0.0
    refuse: bool = False
    stall_s: float = 0.0
    close_after: int | None = None
    malformed_after: int | None = None
    unknown_after: int | None = None
    fault_sessions: int | None = None

    def without_faults(self) -> AgentBehaviour:
        """The same agent, with no fault."""
        return AgentBehaviour(
            self.latency_ms,
            self.silence_ms,
            self.reply_text,
            self.barge_in,
            self.marks,
            yield_ms=self.yield_ms,
        )


@dataclass
class CallRecord:
    """What one call did, on its stream clock (seconds).

    Attributes:
        call: The call's number at the fake (1, 2...).
        problems: Every way the caller broke the protocol (empty for a conforming caller).
        chunks: Caller audio messages received (Twilio ``media``, Pipecat ``AudioRawFrame``).
        turn_ends_s: Where the endpointer heard each caller turn end (end of its speech).
        onsets_s: When each answer's first audio left.
        onsets_sent_s: When the write of each answer's first audio returned: later than its
            onset only by the agent's own delay in sending (an agent held off the processor).
        clears_s: When each ``clear`` (Pipecat: ``InterruptionFrame``) was sent (barge-in).
        clears_sent_s: When the write of each ``clear`` returned.
        heard_s: Where the caller's speech over each answer it stopped began: its first
            non-zero sample on the stream clock (the silence the caller sends is exact zeros).
        origin_ns: The call's stream clock origin on the agent's monotonic clock (the earliest
            arrival less the samples received by then); on one machine the harness reads the
            same clock, so it compares with a trace's ``t0_ns``.
        marks_echoed: The names of the marks the caller echoed back (Twilio).
        stopped: The caller sent ``stop`` (Twilio).
    """

    call: int
    problems: list[str] = field(default_factory=list)
    chunks: int = 0
    turn_ends_s: list[float] = field(default_factory=list)
    onsets_s: list[float] = field(default_factory=list)
    onsets_sent_s: list[float] = field(default_factory=list)
    clears_s: list[float] = field(default_factory=list)
    clears_sent_s: list[float] = field(default_factory=list)
    heard_s: list[float] = field(default_factory=list)
    origin_ns: int | None = None
    marks_echoed: list[str] = field(default_factory=list)
    stopped: bool = False


class AgentCall:
    """One websocket call to the fake agent, over ``wire``."""

    def __init__(
        self,
        ws: ServerConnection,
        behaviour: AgentBehaviour,
        record: CallRecord,
        wire: type[AgentWire],
    ) -> None:
        self.ws = ws
        self.behaviour = behaviour
        self.record = record
        self.wire = wire(record.problems)
        self.rate = self.wire.RATE
        self.endpointer = EnergyEndpointer(self.rate, behaviour.silence_ms)
        self.samples = 0
        self._recent = np.zeros(0, dtype=np.float32)
        """The latest caller samples, to place a barge-in's first sample."""
        self.origin_ns: int | None = None
        self.answer: asyncio.Task[None] | None = None
        self.playing_until_s = 0.0
        """Where the caller's playback of the answers ends (stream clock)."""
        self.messages = 0

    def now_s(self) -> float:
        """The stream clock now."""
        return (time.monotonic_ns() - (self.origin_ns or time.monotonic_ns())) / NS_PER_S

    async def run(self) -> None:
        """Serve the call until the caller hangs up (or a fault ends it)."""
        try:
            async for raw in self.ws:
                arrival = time.monotonic_ns()
                self.messages += 1
                if await self._fault():
                    return
                audio = self.wire.read(raw)
                if audio is not None:
                    self._heard(arrival, audio)
        except ConnectionClosed:
            pass
        finally:
            if self.answer is not None:
                self.answer.cancel()
            self.record.chunks = self.wire.chunks
            self.record.origin_ns = self.origin_ns
            self.record.marks_echoed = self.wire.marks_echoed
            self.record.stopped = self.wire.stopped

    async def _fault(self) -> bool:
        """Inject the behaviour's fault at its message count; True when the call is over."""
        b, n = self.behaviour, self.messages
        if b.close_after is not None and n >= b.close_after:
            self.ws.transport.abort()  # no closing handshake
            return True
        if b.malformed_after is not None and n == b.malformed_after:
            await self.ws.send(self.wire.malformed())
        if b.unknown_after is not None and n == b.unknown_after:
            await self.send(self.wire.unknown())
        return False

    def _heard(self, arrival: int, audio: np.ndarray) -> None:
        self.samples += len(audio)
        origin = arrival - self.samples * NS_PER_S // self.rate
        self.origin_ns = origin if self.origin_ns is None else min(self.origin_ns, origin)
        keep = 3 * self.endpointer.window + len(audio)
        self._recent = np.concatenate([self._recent, audio])[-keep:]
        for event in self.endpointer.push(audio):
            if event.change == "started":
                self._caller_started(self._first_sample_s(event.at))
            else:
                self._turn_ended(event.at / self.rate)

    def _first_sample_s(self, at: int) -> float:
        """Where speech the endpointer says started at window ``at`` begins: its first sample."""
        base = self.samples - len(self._recent)
        lo = max(at - self.endpointer.window, base)
        loud = np.flatnonzero(self._recent[lo - base :])
        return (lo + int(loud[0]) if loud.size else at) / self.rate

    def _caller_started(self, at_s: float) -> None:
        """The caller speaks: over an answer still playing, that is a barge-in."""
        if not self.behaviour.barge_in or self.answer is None:
            return
        if self.answer.done() and self.playing_until_s <= self.now_s():
            return
        self.record.heard_s.append(round(at_s, 6))
        if self.behaviour.yield_ms > 0:
            self.spawn(self._clear_at(at_s + self.behaviour.yield_ms / 1000))
            return
        self._clear()

    async def _clear_at(self, at_s: float) -> None:
        """Stop the answer at ``at_s`` on the stream clock."""
        assert self.origin_ns is not None
        await sleep_until(self.origin_ns + round(at_s * NS_PER_S))
        self._clear()

    def _clear(self) -> None:
        """Stop the answer now and tell the caller to drop what it has not played."""
        if self.answer is None:
            return
        self.answer.cancel()
        self.record.clears_s.append(self.now_s())
        self.playing_until_s = self.now_s()
        self.spawn(self._send_clear())

    async def _send_clear(self) -> None:
        await self.send(self.wire.clear())
        self.record.clears_sent_s.append(self.now_s())

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
        """The answer as 40 ms pieces, paced in real time from ``due_s``.

        The first piece leaves at ``due_s``, the next :data:`AHEAD_PIECES` right behind it, and
        the rest each as far ahead of its time: the caller's side always holds that much
        unplayed, so a ``clear`` finds audio to drop however late this loop runs.
        """
        pcm = to_pcm16(resample(answer_audio(self.behaviour.reply_text), SAMPLE_RATE, self.rate))
        piece = round(PIECE_S * self.rate)
        assert self.origin_ns is not None
        start_ns = self.origin_ns + round(due_s * NS_PER_S)
        for k, at in enumerate(range(0, len(pcm), piece)):
            ahead = min(k, AHEAD_PIECES) * piece
            await sleep_until(start_ns + (at - ahead) * NS_PER_S // self.rate)
            if k == 0:
                self.record.onsets_s.append(self.now_s())
                self.playing_until_s = self.now_s()
            part = pcm[at : at + piece]
            await self.send(self.wire.audio(part))
            if k == 0:
                self.record.onsets_sent_s.append(self.now_s())
            self.playing_until_s = max(self.playing_until_s, self.now_s()) + len(part) / self.rate
        mark = self.wire.mark(f"answer-{len(self.record.onsets_s)}")
        if self.behaviour.marks and mark is not None:
            await self.send(mark)

    async def send(self, message: Message) -> None:
        """Send one agent message (a caller that hung up is not an error)."""
        with contextlib.suppress(ConnectionClosed):
            await self.ws.send(message)
