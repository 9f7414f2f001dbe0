"""A fake voice agent on voicebench's generic websocket, on 127.0.0.1 (docs/wire-formats.md 9).

It takes the optional ``start`` message, endpoints the caller's PCM16 frames with the energy
endpointer of :mod:`pmc.testing.loopback`, and answers each turn end ``latency_ms`` after the
end of speech arrived: a final ``transcript`` of the caller (canned: it hears no words) and of
its own answer, then the answer's audio (Piper) in 20 ms messages at ``speedup`` times real
time, as an agent streams what its TTS makes (so the client has audio queued when a ``clear``
comes). When the caller speaks over an answer for ``barge_in_ms`` it stops sending and sends
``{"type": "clear"}``. Everything it did is in its :class:`AgentSession` records, on the shared
monotonic clock; it runs in a process of its own (:func:`voicebench_process`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from pmc.audio import FloatArray, resample, to_pcm16
from pmc.clock import NS_PER_S
from pmc.testing._child import serve_in_child
from pmc.testing.hosted._deadline import sleep_until
from pmc.testing.loopback import SPEECH_RMS, Endpointer, spoken_reply

HOST = "127.0.0.1"
RATE = 16_000
"""voicebench's rate, both ways."""
FRAME_SAMPLES = RATE * 20 // 1000
"""One 20 ms message of the answer."""
USER_TEXT = "(the caller's turn)"
"""The canned transcript of the caller's turn (the fake recognises no words)."""
START_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class AgentBehaviour:
    """How the fake agent behaves in every session.

    Attributes:
        latency_ms: From the arrival of the last speech frame to the first answer message.
        silence_ms: Silence after speech before it decides the turn has ended.
        reply_text: What it says (Piper, 16 kHz).
        barge_in_ms: Caller speech over its answer, in received audio, after which it stops and
            sends ``clear``; None never stops.
        speedup: How much faster than real time its answer's messages are sent.
    """

    latency_ms: float = 800.0
    silence_ms: float = 500.0
    reply_text: str = "Okay, sure thing, I can help you with that."
    barge_in_ms: float | None = 120.0
    speedup: float = 2.0


@dataclass
class AgentSession:
    """What one session heard and did (times on the fake's monotonic clock, nanoseconds).

    Attributes:
        start: The ``start`` message, if one came first.
        frames: Input frames received.
        onsets_began_ns: When it began to write each answer's first audio message.
        onsets_sent_ns: When that write returned.
        clears_began_ns: When it began to write each ``clear``.
        clears_sent_ns: When that write returned.
        other_text: Text messages other than ``start`` it received.
    """

    start: dict[str, Any] | None = None
    frames: int = 0
    onsets_began_ns: list[int] = field(default_factory=list)
    onsets_sent_ns: list[int] = field(default_factory=list)
    clears_began_ns: list[int] = field(default_factory=list)
    clears_sent_ns: list[int] = field(default_factory=list)
    other_text: list[str] = field(default_factory=list)


class _Session:
    """One connection: endpoint the caller, answer each turn end, stop when talked over."""

    def __init__(self, ws: ServerConnection, behaviour: AgentBehaviour, voice: FloatArray):
        self.ws = ws
        self.behaviour = behaviour
        self.voice = voice
        self.record = AgentSession()
        self.endpointer = Endpointer(behaviour.silence_ms, RATE)
        self.answer: asyncio.Task[None] | None = None
        self.over = 0
        """Caller speech received, in samples, while the current answer plays."""

    async def run(self) -> AgentSession:
        try:
            async for message in self.ws:
                arrival = time.monotonic_ns()
                if isinstance(message, str):
                    self._text(message)
                    continue
                self.record.frames += 1
                await self._frame(message, arrival)
        except ConnectionClosed:
            pass
        finally:
            if self.answer is not None:
                self.answer.cancel()
        return self.record

    def _text(self, message: str) -> None:
        detail = json.loads(message)
        if detail.get("type") == "start" and self.record.frames == 0:
            self.record.start = detail
        else:
            self.record.other_text.append(message)

    async def _frame(self, pcm: bytes, arrival_ns: int) -> None:
        answering = self.answer is not None and not self.answer.done()
        samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
        loud = float(np.sqrt(np.mean(samples**2))) >= SPEECH_RMS if len(samples) else False
        if answering and self.behaviour.barge_in_ms is not None:
            self.over = self.over + len(samples) if loud else 0
            if self.over * 1000 >= self.behaviour.barge_in_ms * RATE:
                assert self.answer is not None
                self.answer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self.answer
                self.record.clears_began_ns.append(time.monotonic_ns())
                await self.ws.send(json.dumps({"type": "clear"}))
                self.record.clears_sent_ns.append(time.monotonic_ns())
                self.over = 0
        ended = self.endpointer.push(pcm, arrival_ns)
        if ended is not None and (self.answer is None or self.answer.done()):
            self.over = 0
            self.answer = asyncio.get_running_loop().create_task(self._say(ended.arrival_ns))

    async def _say(self, end_ns: int) -> None:
        """The transcripts, then the answer in 20 ms messages, ``speedup`` times real time."""
        first_ns = end_ns + round(self.behaviour.latency_ms * NS_PER_S / 1000)
        await sleep_until(first_ns)
        for role, text in (("user", USER_TEXT), ("agent", self.behaviour.reply_text)):
            message = {"type": "transcript", "role": role, "text": text, "final": True}
            await self.ws.send(json.dumps(message))
        pcm = to_pcm16(self.voice).astype("<i2").tobytes()
        step = FRAME_SAMPLES * 2
        for i, at in enumerate(range(0, len(pcm), step)):
            step_ns = FRAME_SAMPLES * NS_PER_S / RATE / self.behaviour.speedup
            await sleep_until(first_ns + round(i * step_ns))
            if i == 0:
                self.record.onsets_began_ns.append(time.monotonic_ns())
            await self.ws.send(pcm[at : at + step])
            if i == 0:
                self.record.onsets_sent_ns.append(time.monotonic_ns())


@asynccontextmanager
async def serve_voicebench_agent(
    behaviour: AgentBehaviour, sessions: list[AgentSession]
) -> AsyncIterator[str]:
    """Serve the fake agent in the running loop; yields its URL; appends each session's record."""
    voice = resample(spoken_reply(behaviour.reply_text), 24_000, RATE)

    async def handler(ws: ServerConnection) -> None:
        sessions.append(await _Session(ws, behaviour, voice).run())

    async with serve(handler, HOST, 0, compression=None, ping_interval=None) as server:
        port = server.sockets[0].getsockname()[1]
        yield f"ws://{HOST}:{port}/"


@dataclass
class VoicebenchProcess:
    """A fake agent in a child process: its URL, and its sessions once it has stopped."""

    url: str
    sessions: list[AgentSession] = field(default_factory=list)


@contextmanager
def voicebench_process(behaviour: AgentBehaviour | None = None) -> Iterator[VoicebenchProcess]:
    """Serve the fake agent from a child process until the block ends; then read its records."""
    spec = json.dumps(asdict(behaviour or AgentBehaviour()))
    with serve_in_child("pmc.testing.voicebench", spec, START_TIMEOUT_S) as child:
        fake = VoicebenchProcess(child.url)
        yield fake
    fake.sessions = [AgentSession(**row) for row in child.records]


async def _serve_until_stdin_closes(behaviour: AgentBehaviour) -> list[AgentSession]:
    loop = asyncio.get_running_loop()
    closed = asyncio.Event()
    loop.add_reader(sys.stdin.fileno(), closed.set)
    sessions: list[AgentSession] = []
    async with serve_voicebench_agent(behaviour, sessions) as url:
        print(url, flush=True)
        await closed.wait()
    loop.remove_reader(sys.stdin.fileno())
    return sessions


def main(argv: list[str] | None = None) -> None:
    """``python -m pmc.testing.voicebench SPEC``: serve until stdin closes, then print records."""
    args = sys.argv[1:] if argv is None else argv
    behaviour = AgentBehaviour(**json.loads(args[0])) if args else AgentBehaviour()
    os.nice(10)  # the fake stands in for an agent elsewhere: the harness goes first
    sessions = asyncio.run(_serve_until_stdin_closes(behaviour))
    print(json.dumps([asdict(s) for s in sessions]), flush=True)


if __name__ == "__main__":
    main()
