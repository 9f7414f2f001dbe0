"""A Moshi-protocol fake that listens: it answers the end of the user's turn with real words.

Its answers start at a seeded random sample of an output frame, and it records where on its
stream clock each answer's speech began: the truth an onset is measured against.
"""

from __future__ import annotations

import random
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

import numpy as np
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from pmc.audio import FloatArray
from pmc.clock import NS_PER_S
from pmc.duplex_server import FRAME_SAMPLES, SAMPLE_RATE, Kind
from pmc.testing.duplex_server._behaviour import DuplexAnswer, ListenerBehaviour, ListenerSession
from pmc.testing.duplex_server._env import HOST
from pmc.testing.hosted import EnergyEndpointer, answer_audio
from pmc.testing.hosted._deadline import sleep_until
from pmc.testing.hosted._endpointer import Change

FRAME_NS = FRAME_SAMPLES * NS_PER_S // SAMPLE_RATE
"""One 80 ms frame in nanoseconds."""
FADE_SAMPLES = SAMPLE_RATE * 2 // 1000
"""Speech it stops fades out over its last 2 ms, as a model's decoder ends speech: a hard cut
mid-waveform is a click, whose energy the codec spreads up to a whole codec frame past it."""


@dataclass
class _Saying:
    """An answer being spoken: its audio (lead-in, then speech), its words, how much went out."""

    answer: DuplexAnswer
    audio: FloatArray
    pieces: list[str]
    given: int = 0
    played_until_ns: int = 0
    """Where a client's playback of the frames sent so far ends."""

    def next_frame(self) -> tuple[FloatArray, str]:
        """The next output frame's audio and text piece."""
        frame = np.zeros(FRAME_SAMPLES, dtype=np.float32)
        part = self.audio[self.given : self.given + FRAME_SAMPLES]
        frame[: len(part)] = part
        text = self.pieces[self.given // FRAME_SAMPLES]
        self.given += len(part)
        self.answer.said_s = max(0, self.given - self.answer.offset) / SAMPLE_RATE
        return frame, text

    @property
    def done(self) -> bool:
        """Whether all of it went out."""
        return self.given >= len(self.audio)


class ListeningMoshi:
    """The stock protocol with an endpointer and a voice instead of a model.

    Like Moshi, it answers every input frame with one output frame (silence while it has
    nothing to say), a steady :attr:`ListenerBehaviour.step_ms` after the frame was due. Its
    energy endpointer (the hosted fakes', 20 ms windows at the gate's 0.01 RMS) reads the
    decoded input; once speech has been followed by :attr:`ListenerBehaviour.silence_ms` of
    quiet, the next output frame starts the answer at a seeded random sample, and the frames
    after it carry the rest, with the answer's words as text pieces. Turn ends heard while it
    speaks are not answered; speech starting while it speaks stops it
    (:attr:`ListenerBehaviour.barge_in`). Every session's :class:`ListenerSession` records, on
    its stream clock, where each answer's speech began.
    """

    def __init__(self, behaviour: ListenerBehaviour | None = None) -> None:
        self.behaviour = behaviour or ListenerBehaviour()
        self.sessions: list[ListenerSession] = []
        answer_audio(self.behaviour.reply_text)  # voiced before any session, never during one

    async def _session(self, ws: ServerConnection) -> None:
        import sphn

        behaviour = self.behaviour
        record = ListenerSession(f"duplex_{len(self.sessions) + 1:04d}")
        query = parse_qs(urlsplit(ws.request.path if ws.request else "").query)
        record.seed = int(query["seed"][0]) if query.get("seed") else None
        self.sessions.append(record)
        own = record.session_id if record.seed is None else record.seed
        draws = random.Random(f"{behaviour.seed}:{own}")
        reader, writer = sphn.OpusStreamReader(SAMPLE_RATE), sphn.OpusStreamWriter(SAMPLE_RATE)
        endpointer = EnergyEndpointer(SAMPLE_RATE, behaviour.silence_ms)
        voice = answer_audio(behaviour.reply_text)
        words = behaviour.reply_text.split()
        pending = np.zeros(0, dtype=np.float32)
        received = 0
        heard_end: tuple[float, float] | None = None  # a turn end not yet answered
        saying: _Saying | None = None
        await ws.send(bytes([Kind.HANDSHAKE]))
        # Output leaves on a grid fixed now: the stream starts just after the client has the
        # handshake, and an origin estimated from the first frames alone would move the grid.
        grid_ns = time.monotonic_ns()
        queued_ns = grid_ns  # where a client's playback of the frames sent so far ends
        out = _Outbox(ws)
        try:
            async for message in ws:
                arrival = time.monotonic_ns()
                if not isinstance(message, bytes) or message[:1] != bytes([Kind.AUDIO]):
                    continue
                pcm = np.asarray(reader.append_bytes(message[1:]), dtype=np.float32).reshape(-1)
                received += len(pcm)
                origin = arrival - received * NS_PER_S // SAMPLE_RATE
                if record.origin_ns is None or origin < record.origin_ns:
                    record.origin_ns = origin
                heard = endpointer.push(pcm) if out.open else []  # once closed, it only counts
                for event in heard:
                    record.speech.append((event.change.value, event.at / SAMPLE_RATE))
                    if event.change is Change.STOPPED and saying is None:
                        heard_end = (event.at / SAMPLE_RATE, event.decided / SAMPLE_RATE)
                    elif event.change is Change.STARTED:
                        heard_end = None  # the user went on before it answered
                        if saying is not None and behaviour.yield_ms is not None:
                            _stop_after(saying, event.at, behaviour.yield_ms, record.origin_ns)
                        else:
                            saying = None if behaviour.barge_in else saying
                pending = np.concatenate([pending, pcm])
                while len(pending) >= FRAME_SAMPLES:
                    pending = pending[FRAME_SAMPLES:]
                    if not out.open:  # counted, never heard or answered: nobody is listening
                        record.frames += 1
                        continue
                    starting = None
                    if heard_end is not None and saying is None:
                        offset = draws.randrange(FRAME_SAMPLES)
                        starting = DuplexAnswer(*heard_end, record.frames, offset)
                        record.answers.append(starting)
                        lead_in = np.zeros(starting.offset, dtype=np.float32)
                        audio = np.concatenate([lead_in, voice])
                        saying, heard_end = _Saying(starting, audio, _spread(words, audio)), None
                    frame, text = (np.zeros(FRAME_SAMPLES, dtype=np.float32), "")
                    spoken: tuple[_Saying, int] | None = None  # what this frame carries, from
                    if saying is not None:
                        spoken = (saying, saying.given)
                        frame, text = saying.next_frame()
                        saying = None if saying.done else saying
                    record.frames += 1
                    page = bytes(writer.append_pcm(frame))
                    due_s = record.frames * FRAME_SAMPLES / SAMPLE_RATE + behaviour.step_ms / 1000
                    await sleep_until(grid_ns + round(due_s * NS_PER_S))
                    sent_ns = time.monotonic_ns()
                    play_ns = max(sent_ns, queued_ns)
                    queued_ns = play_ns + FRAME_NS
                    if starting is not None:
                        starting.sent_ns, starting.played_ns = sent_ns, play_ns
                    if spoken is not None:
                        _played(*spoken, play_ns)
                    if page and await out.send(bytes([Kind.AUDIO]) + page):
                        record.sent_ns.append(sent_ns)
                    if text:
                        await out.send(bytes([Kind.TEXT]) + text.encode())
        except ConnectionClosed:
            pass
        finally:
            origin_ns = record.origin_ns or 0
            for answer in record.answers:
                played_s = (answer.played_ns - origin_ns) / NS_PER_S
                answer.speech_s = round(played_s + answer.offset / SAMPLE_RATE, 6)
                if answer.stop_ns:
                    answer.stopped_s = round((answer.stop_ns - origin_ns) / NS_PER_S, 6)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[str]:
        """Serve on a free loopback port; yields the ``/api/chat`` URL."""
        async with serve(self._session, HOST, 0, compression=None) as server:
            port = next(iter(server.sockets)).getsockname()[1]
            yield f"ws://{HOST}:{port}/api/chat"


class _Outbox:
    """A session's sending side: once the client has closed, nothing more is sent.

    Its input may still hold frames the client sent before it closed (a fake held off the
    processor falls behind); the session goes on reading them, so that it counts every frame
    the client sent, but answers none of them.
    """

    def __init__(self, ws: ServerConnection) -> None:
        self._ws = ws
        self.open = True

    async def send(self, message: bytes) -> bool:
        """Send ``message`` while the connection is open; whether it went."""
        if self.open:
            try:
                await self._ws.send(message)
            except ConnectionClosed:
                self.open = False
        return self.open


def _stop_after(saying: _Saying, heard: int, yield_ms: float, origin_ns: int | None) -> None:
    """Cut ``saying`` ``yield_ms`` after stream sample ``heard``, as its frames are played.

    Its first frame plays from ``played_ns`` on, and the frames after it follow on (each leaves
    a steady step after its input frame was due, before the one ahead has played out); where
    one leaves late, the stop it carries is placed where that frame was played (:func:`_played`).
    """
    answer = saying.answer
    if answer.heard_s is not None or origin_ns is None or not answer.played_ns:
        return  # it stops once, for the first speech it heard (after its first frame went out)
    answer.heard_s = round(heard / SAMPLE_RATE, 6)
    first = (answer.played_ns - origin_ns) * SAMPLE_RATE / NS_PER_S  # its first sample, played
    cut = round(heard + yield_ms * SAMPLE_RATE / 1000 - first)
    answer.cut = max(saying.given, min(cut, len(saying.audio)))
    saying.audio = saying.audio[: answer.cut].copy()
    fade = saying.audio[max(saying.given, answer.cut - FADE_SAMPLES) :]
    fade *= np.linspace(1.0, 0.0, FADE_SAMPLES + 1, dtype=np.float32)[-len(fade) - 1 : -1]
    if answer.cut == saying.given:  # too late to wait: it stops where what it sent ends
        answer.stop_ns = saying.played_until_ns


def _played(saying: _Saying, before: int, play_ns: int) -> None:
    """A frame of ``saying`` from its sample ``before`` on is played from ``play_ns``."""
    saying.played_until_ns = play_ns + FRAME_NS
    answer = saying.answer
    if answer.cut is not None and before < answer.cut <= before + FRAME_SAMPLES:
        answer.stop_ns = play_ns + (answer.cut - before) * NS_PER_S // SAMPLE_RATE


def _spread(words: list[str], audio: FloatArray) -> list[str]:
    """The text piece of each output frame that carries ``audio``: its words, spread evenly."""
    frames = -(-len(audio) // FRAME_SAMPLES)
    pieces = [""] * frames
    for i, word in enumerate(words):
        pieces[i * frames // len(words)] += f" {word}"
    return pieces
