"""A fake vLLM-Omni full-duplex server on 127.0.0.1 (docs/wire-formats.md section 10).

It speaks the contract of ``/v1/realtime?duplex=1`` with vLLM-Omni's own types: every client
event goes through the server's parser (``command_from_realtime``, with the defaults the
session's ``session.update`` declared), and every event it sends is one of the server's event
classes rendered by its ``to_realtime()``, numbered with ``server_event_seq`` and kept in a
journal for ``session.resume``. A message the parser refuses gets the server's ``error`` event
and is recorded with its code, so a test can require that none was refused.

The model is a stand-in: an energy endpointer over the appended audio, decisions at each
``unit_ms`` of input (an id-less ``response.listen`` while it listens), and at the first unit
after a turn end a response (``response.created``, ``response.speak``, its transcript, then its
audio in ``chunk_ms`` deltas at ``speedup`` times real time, ``response.done``). Caller speech
over an answer for ``barge_in_ms`` stops it (``overlap.decision``,
``output_audio_buffer.cleared``, a cancelled ``response.done``). With ``drop_after_ms`` it drops
the connection (no closing handshake) once a session has received that much input, keeping the
session for a resume. It runs in a process of its own (:func:`omni_process`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import asdict, dataclass, field
from functools import cache
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import numpy as np
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from pmc.audio import FloatArray, resample, to_pcm16
from pmc.clock import NS_PER_S
from pmc.testing._child import serve_in_child
from pmc.testing.hosted._deadline import sleep_until
from pmc.testing.loopback import SPEECH_RMS, Endpointer, spoken_reply
from pmc.testing.vllm_omni._protocol import OmniProtocol, omni_protocol

HOST = "127.0.0.1"
PATH = "/v1/realtime"
START_TIMEOUT_S = 60.0
ENVELOPE = frozenset({"session.resume", "session.event_ack"})
"""Client events the server's websocket handler reads itself, never as commands."""


@dataclass(frozen=True)
class OmniBehaviour:
    """How the fake model behaves in every session.

    Attributes:
        unit_ms: Input per model step: it decides to listen or speak once per unit received
            (MiniCPM-o and its kin work in 1 s units).
        silence_ms: Silence after speech before it takes the turn to have ended.
        latency_ms: From the unit where it decides to speak to its first audio delta.
        reply_text: What it says (Piper, at the session's output rate).
        chunk_ms: Audio per ``response.output_audio.delta``.
        speedup: How much faster than real time it sends its audio.
        barge_in_ms: Caller speech over its answer, in received audio, after which it yields;
            None never yields.
        drop_after_ms: Input after which it drops the connection, once per session (None: never).
    """

    unit_ms: float = 1000.0
    silence_ms: float = 500.0
    latency_ms: float = 200.0
    reply_text: str = "Okay, sure thing, I can help you with that."
    chunk_ms: float = 200.0
    speedup: float = 2.0
    barge_in_ms: float | None = 240.0
    drop_after_ms: float | None = None


@dataclass
class OmniSession:
    """What one session heard and did (times on the fake's monotonic clock, nanoseconds).

    Attributes:
        query: The query of the URL it was opened at.
        session: The ``session`` object of its ``session.update``.
        received: Client events received, by type (the envelope's included).
        refused: ``type: code: message`` of each event the server's parser refused.
        input_ms: Audio appended, by its duration.
        last_audio_end_ms: The last append's ``audio_end_ms``.
        acks: Each ``playback.ack`` as ``[response_id, played_ms, committed_ms]``.
        audio_seqs: The ``server_event_seq`` of every audio delta it sent.
        onsets_began_ns: When it began to write each answer's first audio delta.
        onsets_sent_ns: When that write returned.
        yields_ns: When it yielded an answer to the caller.
        drops: Connections it dropped.
        input_ms_at_drop: Input it had read when it dropped the connection (what the client
            had written after that, still in the socket, is lost with it).
        resumes: ``session.resume`` requests it accepted, each ``[last_received, replayed]``.
        closed: Whether the client ended it with ``session.close``.
    """

    query: dict[str, str] = field(default_factory=dict)
    session: dict[str, Any] = field(default_factory=dict)
    received: dict[str, int] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    input_ms: float = 0.0
    last_audio_end_ms: float = 0.0
    acks: list[list[Any]] = field(default_factory=list)
    audio_seqs: list[int] = field(default_factory=list)
    onsets_began_ns: list[int] = field(default_factory=list)
    onsets_sent_ns: list[int] = field(default_factory=list)
    yields_ns: list[int] = field(default_factory=list)
    drops: int = 0
    input_ms_at_drop: float = 0.0
    resumes: list[list[int]] = field(default_factory=list)
    closed: bool = False


@cache
def _voice(text: str) -> FloatArray:
    """What the fake says, synthesised once per process."""
    return spoken_reply(text)


class _Session:
    """One duplex session, which outlives a dropped connection until it is resumed."""

    def __init__(self, number: int, behaviour: OmniBehaviour, protocol: OmniProtocol) -> None:
        self.id = f"sess_{number:04d}"
        self.token = f"resume-{number:04d}-{os.getpid()}"
        self.behaviour = behaviour
        self.protocol = protocol
        self.record = OmniSession()
        self.received: Counter[str] = Counter()
        self.defaults: Any = protocol.defaults()
        self.journal: list[tuple[int, str]] = []
        self.ws: ServerConnection | None = None
        self.endpointer: Endpointer | None = None
        self.turn_ended = False
        self.speaking = False
        self.units = 0
        self.answer: asyncio.Task[None] | None = None
        self.response: str | None = None
        self.playing_until_ns = 0
        """When the current answer will have played at the client, had it played at once."""
        self.over_ms = 0.0
        self.responses = itertools.count(1)
        self.voice: FloatArray | None = None
        self.output_rate = 24_000
        self.dropped = False

    # -- sending ------------------------------------------------------------------------------

    async def emit(self, event: Any) -> int:
        """Number, journal and send one of the server's events (kept for a resume if it fails)."""
        payload = dict(event.to_realtime())
        seq = len(self.journal) + 1
        payload["server_event_seq"] = seq
        text = json.dumps(payload, separators=(",", ":"))
        self.journal.append((seq, text))
        if self.ws is not None:
            with contextlib.suppress(ConnectionClosed):
                await self.ws.send(text)
        return seq

    # -- receiving ----------------------------------------------------------------------------

    async def take(self, message: dict[str, Any]) -> None:
        """One client event after the session opened."""
        kind = str(message.get("type"))
        self.received[kind] += 1
        if kind == "session.event_ack":
            seq = message.get("server_event_seq")
            if not isinstance(seq, int) or seq < 0:
                await self.refuse(kind, "bad_event", "session.event_ack needs server_event_seq")
            return
        if kind == "session.resume":
            await self.refuse(kind, "bad_event", "session.resume on an open connection")
            return
        try:
            command = self.protocol.command_from_realtime(message, defaults=self.defaults)
        except self.protocol.error as exc:
            await self.refuse(kind, str(getattr(exc, "code", "bad_event")), str(exc))
            return
        if kind == "input_audio_buffer.append":
            await self.audio(command)
        elif kind == "playback.ack":
            await self.ack(command)
        elif kind == "session.close":
            self.record.closed = True
            await self.emit(self.protocol.events.SessionClosed(session_id=self.id))
            if self.ws is not None:
                await self.ws.close()

    async def refuse(self, kind: str, code: str, text: str) -> None:
        self.record.refused.append(f"{kind}: {code}: {text}")
        await self.emit(self.protocol.events.error_event(code, text))

    async def open(self, session: dict[str, Any]) -> None:
        """Take the session object (checked by the parser), answer ``session.created``."""
        self.record.session = session
        self.defaults = self.protocol.defaults().with_session_payload(session)
        rate = self.defaults.output_sample_rate_hz or 24_000
        self.output_rate = int(rate)
        self.voice = resample(_voice(self.behaviour.reply_text), 24_000, self.output_rate)
        self.endpointer = Endpointer(self.behaviour.silence_ms, self.defaults.input_sample_rate_hz)
        created = self.protocol.events.SessionCreated(
            session_id=self.id,
            session={**session, "id": self.id, "session_id": self.id},
            resume_token=self.token,
            attachment_generation=1,
        )
        await self.emit(created)

    async def audio(self, command: Any) -> None:
        """An append: the endpointer, a yield when talked over, a decision at each unit."""
        if command.format == "pcm_f32le":
            samples = np.frombuffer(command.audio, dtype="<f4").astype(np.float32)
        else:
            samples = np.frombuffer(command.audio, dtype="<i2").astype(np.float32) / 32768.0
        rate = int(command.sample_rate_hz)
        duration_ms = len(samples) * 1000 / rate
        before = self.record.input_ms
        self.record.input_ms += duration_ms
        if command.audio_end_ms is not None:
            self.record.last_audio_end_ms = float(command.audio_end_ms)
        loud = len(samples) > 0 and float(np.sqrt(np.mean(samples**2))) >= SPEECH_RMS
        # Its answer is on until the client has had time to play all of it, not only to receive it.
        answering = self.response is not None and time.monotonic_ns() < self.playing_until_ns
        if answering and self.behaviour.barge_in_ms is not None:
            self.over_ms = self.over_ms + duration_ms if loud else 0.0
            if self.over_ms >= self.behaviour.barge_in_ms:
                await self.yield_turn()
        assert self.endpointer is not None
        pcm = to_pcm16(samples).astype("<i2").tobytes()
        if loud and not self.speaking:
            self.speaking = True
            await self.turn("user_started", "user_speaking")
        if self.endpointer.push(pcm, time.monotonic_ns()) is not None:
            self.speaking = False
            self.turn_ended = True
            await self.turn("user_committed", "user_committed")
        unit = self.behaviour.unit_ms
        for _ in range(int(self.record.input_ms // unit) - int(before // unit)):
            await self.decide()
        drop = self.behaviour.drop_after_ms
        if drop is not None and not self.dropped and self.record.input_ms >= drop:
            self.dropped = True
            self.record.drops += 1
            self.record.input_ms_at_drop = self.record.input_ms
            if self.ws is not None:
                self.ws.transport.abort()  # no closing handshake: the client sees a lost socket
                self.ws = None  # what it had received but not yet read is lost with it

    async def turn(self, event: str, state: str) -> None:
        await self.emit(
            self.protocol.events.TurnEvent(session_id=self.id, event=event, turn_state=state)
        )

    async def decide(self) -> None:
        """One model step: speak at the first unit after a turn end, otherwise listen."""
        self.units += 1
        generating = self.answer is not None and not self.answer.done()
        if generating or time.monotonic_ns() < self.playing_until_ns:
            return
        if self.turn_ended:
            self.turn_ended = False
            self.over_ms = 0.0
            self.response = f"resp_{self.id}_{next(self.responses)}"
            self.answer = asyncio.get_running_loop().create_task(self.say(self.response))
            return
        await self.emit(self.protocol.events.Listen(session_id=self.id))

    async def say(self, response: str) -> None:
        """Create the response, then its transcript and audio on a real-time schedule."""
        events = self.protocol.events
        item = f"item_{response}"
        start_ns = time.monotonic_ns() + round(self.behaviour.latency_ms * NS_PER_S / 1000)
        body = {"id": response, "object": "realtime.response", "status": "in_progress"}
        await self.emit(
            events.ResponseCreated(session_id=self.id, response=body, response_id=response)
        )
        await self.emit(events.Speak(session_id=self.id, response_id=response, item_id=item))
        await self.turn("assistant_started", "assistant_generating")
        assert self.voice is not None
        self.playing_until_ns = start_ns + len(self.voice) * NS_PER_S // self.output_rate
        pcm = to_pcm16(self.voice).astype("<i2").tobytes()
        step = round(self.behaviour.chunk_ms * self.output_rate / 1000) * 2
        step_ns = self.behaviour.chunk_ms * 1e6 / self.behaviour.speedup
        for i, at in enumerate(range(0, len(pcm), step)):
            await sleep_until(start_ns + round(i * step_ns))
            if i == 0:
                self.record.onsets_began_ns.append(time.monotonic_ns())
                text = self.behaviour.reply_text
                await self.emit(
                    events.TranscriptDelta(
                        session_id=self.id, response_id=response, item_id=item, delta=text
                    )
                )
            delta = events.AudioDelta(
                session_id=self.id,
                response_id=response,
                item_id=item,
                delta=base64.b64encode(pcm[at : at + step]).decode("ascii"),
                format="pcm16",
                sample_rate_hz=self.output_rate,
            )
            self.record.audio_seqs.append(await self.emit(delta))
            if i == 0:
                self.record.onsets_sent_ns.append(time.monotonic_ns())
        await self.emit(events.AudioDone(session_id=self.id, response_id=response, item_id=item))
        done = {**body, "status": "completed"}
        await self.emit(
            events.ResponseDone(session_id=self.id, response=done, response_id=response)
        )
        await self.turn("assistant_done", "idle")

    async def yield_turn(self) -> None:
        """Stop the answer the caller is speaking over, as the server does at a barge-in.

        An answer already generated in full is only cleared from the client's playback: it has
        had its ``response.done``.
        """
        assert self.answer is not None and self.response is not None
        generating = not self.answer.done()
        self.answer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.answer
        self.record.yields_ns.append(time.monotonic_ns())
        self.playing_until_ns = 0
        events = self.protocol.events
        policy = str(self.record.session.get("overlap_policy") or "listen_only")
        decision = events.OverlapDecision(
            session_id=self.id, policy=policy, action="barge_in", reason="barge_in_on_speech"
        )
        await self.emit(decision)
        await self.emit(events.OutputAudioCleared(session_id=self.id, response_id=self.response))
        if not generating:
            await self.turn("barge_in", "barge_in")
            self.over_ms = 0.0
            return
        body = {"id": self.response, "object": "realtime.response", "status": "cancelled"}
        await self.emit(
            events.ResponseDone(session_id=self.id, response=body, response_id=self.response)
        )
        await self.turn("barge_in", "barge_in")
        self.over_ms = 0.0

    async def ack(self, command: Any) -> None:
        """A ``playback.ack``: recorded, and acknowledged as the server does."""
        self.record.acks.append([command.response_id, command.played_ms, command.committed_ms])
        details = {
            "type": "playback.acknowledged",
            "response_id": command.response_id,
            "played_ms": command.played_ms,
            "committed_ms": command.committed_ms,
        }
        await self.emit(
            self.protocol.events.PlaybackAcknowledged(session_id=self.id, details=details)
        )

    def close(self) -> OmniSession:
        if self.answer is not None:
            self.answer.cancel()
        self.record.received = dict(self.received)
        return self.record


class _Server:
    """Sessions by id; each connection opens one or resumes one."""

    def __init__(self, behaviour: OmniBehaviour) -> None:
        self.behaviour = behaviour
        self.protocol = omni_protocol()
        self.sessions: dict[str, _Session] = {}
        self.numbers = itertools.count(1)

    async def handle(self, ws: ServerConnection) -> None:
        request = ws.request
        parts = urlsplit(request.path if request is not None else "")
        query = dict(parse_qsl(parts.query))
        try:
            first = json.loads(await ws.recv())
        except (ConnectionClosed, json.JSONDecodeError):
            return
        session = await self.attach(ws, first, query)
        if session is None:
            return
        try:
            async for raw in ws:
                if session.ws is not ws:
                    break  # dropped: the rest of what this connection carried is lost
                try:
                    message = json.loads(raw)
                except json.JSONDecodeError:
                    await session.refuse("?", "bad_event", "not JSON")
                    continue
                await session.take(message)
        except ConnectionClosed:
            pass
        finally:
            if session.ws is ws:
                session.ws = None

    async def attach(
        self, ws: ServerConnection, first: dict[str, Any], query: dict[str, str]
    ) -> _Session | None:
        """Open a session with ``session.update``, or resume one with ``session.resume``."""
        if first.get("type") == "session.resume":
            request = self.protocol.parse_resume_request(first)
            session = self.sessions.get(request.session_id) if request is not None else None
            if request is None or session is None or request.resume_token != session.token:
                await ws.send(
                    json.dumps(
                        self.protocol.events.error_event(
                            "session_not_found", "no such session"
                        ).to_realtime()
                    )
                )
                await ws.close()
                return None
            session.received["session.resume"] += 1
            replay = [
                text
                for seq, text in session.journal
                if seq > request.last_received_server_event_seq
            ]
            session.record.resumes.append([request.last_received_server_event_seq, len(replay)])
            resumed = self.protocol.events.SessionResumed(
                session_id=session.id, session=session.record.session, resume_token=session.token
            )
            await ws.send(json.dumps(resumed.to_realtime()))
            for text in replay:
                await ws.send(text)
            session.ws = ws
            return session
        session = _Session(next(self.numbers), self.behaviour, self.protocol)
        session.record.query = query
        session.received[str(first.get("type"))] += 1
        try:
            self.protocol.command_from_realtime(first, defaults=session.defaults)
        except self.protocol.error as exc:
            session.record.refused.append(f"{first.get('type')}: {getattr(exc, 'code', '')}: {exc}")
        if first.get("type") != "session.update" or not isinstance(first.get("session"), dict):
            session.record.refused.append(f"{first.get('type')}: first event is not session.update")
            self.sessions[session.id] = session
            await ws.close()
            return None
        self.sessions[session.id] = session
        session.ws = ws
        await session.open(first["session"])
        return session


@asynccontextmanager
async def serve_omni(behaviour: OmniBehaviour, records: list[OmniSession]) -> AsyncIterator[str]:
    """Serve the fake in the running loop; yields its URL; appends each session's record."""
    server = _Server(behaviour)
    async with serve(
        server.handle, HOST, 0, compression=None, ping_interval=None, max_size=2**24
    ) as ws:
        port = ws.sockets[0].getsockname()[1]
        yield f"ws://{HOST}:{port}{PATH}"
    records.extend(s.close() for s in server.sessions.values())


@dataclass
class OmniProcess:
    """The fake in a child process: its URL, and its sessions once it has stopped."""

    url: str
    sessions: list[OmniSession] = field(default_factory=list)


@contextmanager
def omni_process(behaviour: OmniBehaviour | None = None) -> Iterator[OmniProcess]:
    """Serve the fake from a child process until the block ends; then read its records."""
    spec = json.dumps(asdict(behaviour or OmniBehaviour()))
    with serve_in_child("pmc.testing.vllm_omni", spec, START_TIMEOUT_S) as child:
        fake = OmniProcess(child.url)
        yield fake
    fake.sessions = [OmniSession(**row) for row in child.records]


async def _serve_until_stdin_closes(behaviour: OmniBehaviour) -> list[OmniSession]:
    loop = asyncio.get_running_loop()
    closed = asyncio.Event()
    loop.add_reader(sys.stdin.fileno(), closed.set)
    records: list[OmniSession] = []
    async with serve_omni(behaviour, records) as url:
        print(url, flush=True)
        await closed.wait()
    loop.remove_reader(sys.stdin.fileno())
    return records


def main(argv: list[str] | None = None) -> None:
    """``python -m pmc.testing.vllm_omni SPEC``: serve until stdin closes, then print records."""
    args = sys.argv[1:] if argv is None else argv
    behaviour = OmniBehaviour(**json.loads(args[0])) if args else OmniBehaviour()
    os.nice(10)  # the fake stands in for a server elsewhere: the harness goes first
    records = asyncio.run(_serve_until_stdin_closes(behaviour))
    print(json.dumps([asdict(s) for s in records]), flush=True)
