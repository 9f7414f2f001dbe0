"""A fake real-time speech system on a loopback websocket, whose response latency is known.

``pmc bench harness`` streams live input to it and compares the response latency the harness
measures with the one the fake was told to produce. The server runs in the caller's own event
loop on 127.0.0.1 (any free port), one session per connection, any number of them at once.

Protocol: each binary message from the client is one input frame, PCM16 mono little-endian at
24 kHz. The server answers in binary PCM16 audio (a tone, in chunks of odd byte counts so that
a sample straddles two messages, sent faster than real time), then one text message
``{"type": "reply", ...}`` saying what it did.

The known latency, on the stream clock. Frame ``i`` covers stream time ``[i*f, (i+1)*f)`` and
is sent when its last sample has been spoken, at ``t0 + (i+1)*f``. Speech ends at the end of
the last frame whose RMS reaches :data:`SPEECH_RMS`: for that frame ``k``, at stream time
``(k+1)*f``, the very instant frame ``k`` is due to arrive. The fake takes frame ``k``'s
arrival as the end of speech, notices it once ``silence_ms`` of silent frames have followed,
and sends the first byte of its reply at ``arrival(k) + latency_ms``. The reply therefore
starts exactly ``latency_ms`` after the end of speech on the stream clock when frame ``k``
left on time and the loopback took no time; everything the harness adds (frame ``k``'s input
lateness, the loopback both ways, event-loop wake-ups on both sides, how soon the client
stamps the reply's receipt) is the error the bench reports. None of it can make the reply
early, so the error is never negative (up to the half-sample rounding of playback).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import asdict, dataclass

import numpy as np
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from pmc.audio import SAMPLE_RATE, FloatArray, to_pcm16
from pmc.clock import NS_PER_S, RealClock
from pmc.testing._child import Child, serve_in_child

HOST = "127.0.0.1"
LATENCY_MS = 700.0
"""Default known latency: a plausible hosted system's, comfortably above the silence below."""
SILENCE_MS = 300.0
"""Default endpointing silence, within the 200-500 ms hosted endpointers are commonly set to."""
REPLY_MS = 1000.0
"""Default reply length: several chunks, long enough to be played well after it arrives."""
SPEECH_RMS = 0.01
"""A frame is speech when its RMS reaches this (-40 dBFS: far above the bench's digital silence,
far below its ~0.1 RMS speech-like input)."""
TONE_HZ = 440.0
TONE_AMPLITUDE = 0.3
"""The reply is a cosine, so its very first sample is non-zero and its onset is exact."""
REPLY_CHUNK_BYTES = (4801, 9599, 7203, 12001)
"""Reply message sizes, cycled: odd byte counts split samples across messages (about 100 to
250 ms of audio each, like a streaming TTS)."""
START_TIMEOUT_S = 30.0
"""How long a child process may take to start serving, or to stop (a fresh interpreter
imports numpy and websockets in about a second)."""
LISTEN_BACKLOG = 1024
"""Pending connections the listening socket queues (asyncio's default of 100 drops SYNs when
128 rollouts connect at once, and a dropped SYN costs a 1 s retransmit)."""


@dataclass(frozen=True)
class LoopbackBehaviour:
    """How the fake system behaves in every session.

    Attributes:
        latency_ms: From the end of speech to the first reply byte sent (the known latency).
        silence_ms: Silence after speech before the endpointer decides the turn has ended.
        reply_ms: Length of the reply tone.
        abort_after_frames: Drop the connection without a closing handshake after this many
            input frames (a fault to test transports with); None never does.
        reply_text: Answer with these words, spoken by Piper from their first audible sample,
            instead of the tone (``reply_ms`` is then unused): a reply that scoring hears as
            speech, for runs that are scored.
    """

    latency_ms: float = LATENCY_MS
    silence_ms: float = SILENCE_MS
    reply_ms: float = REPLY_MS
    abort_after_frames: int | None = None
    reply_text: str | None = None

    def __post_init__(self) -> None:
        if self.silence_ms <= 0 or self.reply_ms <= 0:
            raise ValueError("silence_ms and reply_ms must be positive")
        if self.latency_ms < self.silence_ms:
            raise ValueError(
                f"latency_ms ({self.latency_ms}) must be at least silence_ms "
                f"({self.silence_ms}): the endpointer only knows speech ended after the silence"
            )


@dataclass(frozen=True)
class EndOfSpeech:
    """The last speech frame before a long enough silence, as the server saw it."""

    frame: int
    arrival_ns: int


class Endpointer:
    """Deterministic energy endpointer over received frames.

    A frame is speech when its RMS reaches :data:`SPEECH_RMS`; a turn ends once ``silence_ms``
    of silent frames have followed speech. Frame durations come from their sample counts.
    """

    def __init__(self, silence_ms: float, sample_rate: int = SAMPLE_RATE) -> None:
        self._silence_needed = math.ceil(silence_ms * sample_rate / 1000)
        self._frames = 0
        self._last_speech: EndOfSpeech | None = None
        self._silent = 0

    def push(self, pcm: bytes, arrival_ns: int) -> EndOfSpeech | None:
        """Take one frame; returns the end of speech when this frame completes the silence."""
        samples = np.frombuffer(pcm, dtype="<i2", count=len(pcm) // 2).astype(np.float32)
        samples /= 32768.0
        energy = float(np.dot(samples, samples)) / max(len(samples), 1)
        index = self._frames
        self._frames += 1
        if energy >= SPEECH_RMS**2:
            self._last_speech = EndOfSpeech(index, arrival_ns)
            self._silent = 0
            return None
        if self._last_speech is None:
            return None
        self._silent += len(samples)
        if self._silent < self._silence_needed:
            return None
        ended, self._last_speech = self._last_speech, None
        return ended


def reply_tone(reply_ms: float, sample_rate: int = SAMPLE_RATE) -> FloatArray:
    """The reply: a cosine whose first sample is at full amplitude."""
    n = round(reply_ms * sample_rate / 1000)
    t = np.arange(n, dtype=np.float64) / sample_rate
    return (TONE_AMPLITUDE * np.cos(2 * np.pi * TONE_HZ * t)).astype(np.float32)


def spoken_reply(text: str) -> FloatArray:
    """``text`` spoken by Piper, from its first sample above :data:`SPEECH_RMS` on."""
    from pmc.testing.speech import spoken

    speech = spoken(text)
    audible = np.flatnonzero(np.abs(speech) >= SPEECH_RMS)
    return speech[audible[0] :] if audible.size else speech


def reply_chunks(
    reply_ms: float, sample_rate: int = SAMPLE_RATE, audio: FloatArray | None = None
) -> list[bytes]:
    """The reply (``audio``, else the tone) as PCM16 bytes cut into :data:`REPLY_CHUNK_BYTES`."""
    reply = reply_tone(reply_ms, sample_rate) if audio is None else audio
    data = to_pcm16(reply).astype("<i2").tobytes()
    chunks: list[bytes] = []
    at = 0
    while at < len(data):
        size = REPLY_CHUNK_BYTES[len(chunks) % len(REPLY_CHUNK_BYTES)]
        chunks.append(data[at : at + size])
        at += size
    return chunks


class _Session:
    """One connection: endpoint the input, reply once per turn at the known latency."""

    def __init__(self, ws: ServerConnection, behaviour: LoopbackBehaviour, chunks: list[bytes]):
        self.ws = ws
        self.behaviour = behaviour
        self.chunks = chunks
        self.clock = RealClock()
        self.endpointer = Endpointer(behaviour.silence_ms)
        self.replies: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        """Read frames until the client goes; each turn's end schedules a reply."""
        frames = 0
        try:
            async for message in self.ws:
                arrival = self.clock.now_ns()  # the instant the frame reached the system
                if isinstance(message, str):
                    continue  # no control messages in this protocol
                frames += 1
                ended = self.endpointer.push(message, arrival)
                if ended is not None:
                    task = asyncio.get_running_loop().create_task(self.reply(ended))
                    self.replies.add(task)
                    task.add_done_callback(self.replies.discard)
                if frames == self.behaviour.abort_after_frames:
                    self.ws.transport.abort()
                    return
        except ConnectionClosed:
            pass
        finally:
            for task in list(self.replies):
                task.cancel()

    async def reply(self, ended: EndOfSpeech) -> None:
        """Send the tone ``latency_ms`` after the end of speech arrived, then the signal."""
        target = ended.arrival_ns + round(self.behaviour.latency_ms * NS_PER_S / 1000)
        await self.clock.sleep_until(target)
        sent = self.clock.now_ns()
        with contextlib.suppress(ConnectionClosed):
            for chunk in self.chunks:
                await self.ws.send(chunk)
            await self.ws.send(
                json.dumps(
                    {
                        "type": "reply",
                        "latency_ms": self.behaviour.latency_ms,
                        "end_of_speech_frame": ended.frame,
                        "send_late_ms": round((sent - target) / 1e6, 3),
                        "samples": sum(len(c) for c in self.chunks) // 2,
                    }
                )
            )


@asynccontextmanager
async def serve_fake_system(behaviour: LoopbackBehaviour | None = None) -> AsyncIterator[str]:
    """Serve the fake system on 127.0.0.1 in the running event loop; yields its ``ws://`` URL.

    Args:
        behaviour: Latency, endpointing and reply length (by default :data:`LATENCY_MS`,
            :data:`SILENCE_MS` and :data:`REPLY_MS`).
    """
    spec = behaviour or LoopbackBehaviour()
    spoken = None if spec.reply_text is None else spoken_reply(spec.reply_text)
    chunks = reply_chunks(spec.reply_ms, audio=spoken)

    async def handler(ws: ServerConnection) -> None:
        await _Session(ws, spec, chunks).run()

    async with serve(
        handler,
        HOST,
        0,
        compression=None,  # deflating PCM costs CPU and saves nothing
        ping_interval=None,  # sessions are seconds long; keepalive pings only add traffic
        backlog=LISTEN_BACKLOG,
    ) as server:
        port = server.sockets[0].getsockname()[1]
        yield f"ws://{HOST}:{port}"


@contextmanager
def fake_system_process(behaviour: LoopbackBehaviour | None = None) -> Iterator[str]:
    """Serve the fake system from a child process; yields its ``ws://`` URL.

    A real system runs elsewhere and costs the harness nothing; in its own process (and so on
    another core) the fake takes no CPU from the harness either, so what the bench measures is
    the harness. The child is ``python -m pmc.testing.loopback``; it stops when its standard
    input closes, so it cannot outlive this process.
    """
    with fake_system_child(behaviour) as child:
        yield child.url


@contextmanager
def fake_system_child(behaviour: LoopbackBehaviour | None = None) -> Iterator[Child]:
    """As :func:`fake_system_process`, yielding the child: its URL and its process id."""
    spec = json.dumps(asdict(behaviour or LoopbackBehaviour()))
    with serve_in_child("pmc.testing.loopback", spec, START_TIMEOUT_S) as child:
        yield child


async def _serve_until_stdin_closes(behaviour: LoopbackBehaviour) -> None:
    """Serve, print the URL, and stop when standard input reaches its end."""
    loop = asyncio.get_running_loop()
    closed = asyncio.Event()
    loop.add_reader(sys.stdin.fileno(), closed.set)
    async with serve_fake_system(behaviour) as url:
        print(url, flush=True)
        await closed.wait()
    loop.remove_reader(sys.stdin.fileno())


def main(argv: list[str] | None = None) -> None:
    """``python -m pmc.testing.loopback '{"latency_ms": 700}'``: serve until stdin closes."""
    args = sys.argv[1:] if argv is None else argv
    behaviour = LoopbackBehaviour(**json.loads(args[0])) if args else LoopbackBehaviour()
    # The fake stands in for a system on other hardware: on a shared two-core machine it yields
    # the processor to the harness it is measured by.
    os.nice(10)
    asyncio.run(_serve_until_stdin_closes(behaviour))


if __name__ == "__main__":
    main()
