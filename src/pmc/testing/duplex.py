"""Full-duplex test and bench helpers: the duplex environment, tiny models, servers, a fake.

The Moshi servers need PyTorch and moshi, which live in their own environment
(``.venv-duplex``, built by ``make``); from pmc's own environment they run as subprocesses of
that environment's Python. :class:`FakeMoshi` is an in-process stand-in for the stock protocol
(websockets and sphn, no model) whose answers come at known instants: each input frame is
answered at once with one 80 ms frame of tone and a text piece. :class:`ListeningMoshi` speaks
the same protocol but listens: an energy endpointer decides when the user's turn ended, and it
then says real words starting at a seeded random sample of an output frame, recording where on
its stream clock the speech began (run it in a process of its own with
:func:`listening_moshi_process`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from pmc.audio import FloatArray
from pmc.clock import NS_PER_S, RealClock
from pmc.corpus import Channel
from pmc.duplex._wire import FRAME_SAMPLES, SAMPLE_RATE, Kind
from pmc.errors import PmcError
from pmc.harness._protocol import ProtocolParams
from pmc.harness._rollout import RolloutJob, RolloutResult, run_rollout
from pmc.points import Point, PointKind
from pmc.systems import Preload, SystemCard, TimedWord, create_adapter
from pmc.testing._child import serve_in_child
from pmc.testing.hosted._behaviour import REPLY_TEXT
from pmc.testing.hosted._endpointer import Change, EnergyEndpointer
from pmc.testing.hosted._server import sleep_until
from pmc.testing.hosted._voice import answer_audio

HOST = "127.0.0.1"
REPO = Path(__file__).resolve().parents[3]
"""The checkout (this file is ``src/pmc/testing/duplex.py`` in an editable install)."""
DUPLEX_VENV = REPO / ".venv-duplex"
START_TIMEOUT_S = 120.0
"""A server loads its model before it listens: about 2 s alone, longer on busy cores."""
STOP_TIMEOUT_S = 10.0
OPUS_DELAY_SAMPLES = 155
"""How much later speech comes out of the Moshi protocol's codec than it went in, at 24 kHz.

Measured (``tests/duplex/test_clock.py`` measures it again): the bundled voice (the fakes'
answers, starting sharply) put after digital silence at 1,200 seeded random samples of 80 ms
frames, encoded frame by frame with sphn's ``OpusStreamWriter`` (as a server does) and decoded
page by page with its ``OpusStreamReader`` (as the adapter does). Cross-correlating what went in
with what came out gives 154 or 155 samples every time: libopus's lookahead, 6.5 ms (the
312-sample pre-skip at 48 kHz that an Ogg-Opus stream declares), which sphn's reader does not
remove. Scoring's onset moves by as much at most (156 or 157 samples) and often by less: see
:data:`OPUS_PRE_ECHO_S`."""
OPUS_DELAY_S = OPUS_DELAY_SAMPLES / SAMPLE_RATE
""":data:`OPUS_DELAY_SAMPLES` in seconds (6.46 ms)."""
OPUS_PRE_ECHO_S = 0.006
"""How much earlier than :data:`OPUS_DELAY_S` a decoded onset may be found.

A transform codec spreads its quantisation noise ahead of a sharp attack (pre-echo), and
scoring's refined onset starts where the speech first rose above the gate's holding level
(0.005 RMS over 2 ms), which that noise can reach. In the measurement of
:data:`OPUS_DELAY_SAMPLES` the onset moved by a median of 136 samples ("Right, I see ...") or
150 ("That sounds like ..."), by 34 samples at the least: up to 5.0 ms earlier than the signal.
This allows 6 ms, a millisecond more than was seen."""
FRAME_NS = FRAME_SAMPLES * NS_PER_S // SAMPLE_RATE
"""One 80 ms frame in nanoseconds."""
STEP_MS = 30.0
""":class:`ListeningMoshi` sends output frame ``i`` this long after input frame ``i`` was due
(``(i + 1) x 80 ms`` on its stream clock), as a model with a steady step time would: well over
the fake's own work per frame (decoding, endpointing, encoding: a few ms, more on a busy
machine), well under a frame. Steady output is what a client plays where it arrived: output
that arrives early or late by a varying amount pushes every later frame back (the harness
plays each chunk after the one before it, as a client does)."""
LISTEN_SILENCE_MS = 300.0
"""Speech followed by this much quiet ends the user's turn for :class:`ListeningMoshi` (the
hosted fakes' 300 ms server-VAD setting)."""
SERVER_ENV = {
    "NO_TORCH_COMPILE": "1",  # moshi compiles lazily on the first step otherwise (3-14 s, gcc)
    "HF_HUB_OFFLINE": "1",  # a missing local file fails at once instead of retrying the hub
    "PMC_TORCH_THREADS": "1",  # two threads on two busy cores spike to hundreds of ms a step
}


def duplex_python() -> Path:
    """The duplex environment's Python (``PMC_DUPLEX_PYTHON`` overrides it)."""
    override = os.environ.get("PMC_DUPLEX_PYTHON")
    path = Path(override) if override else DUPLEX_VENV / "bin" / "python"
    if not path.exists():
        raise PmcError(f"{path}: no duplex environment; build it with `make .venv-duplex`")
    return path


def free_port() -> int:
    """A TCP port free on the loopback interface right now."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def build_tiny_models(out: Path) -> Path:
    """Build the tiny random-weight models into ``out`` (in the duplex environment)."""
    subprocess.run(
        [str(duplex_python()), "-m", "pmc.duplex.tiny", str(out)],
        check=True,
        capture_output=True,
        env=os.environ | SERVER_ENV,
    )
    return out


def model_args(models: Path, stock: bool) -> list[str]:
    """Command-line arguments that load the tiny models from ``models``."""
    config = "--config-path" if stock else "--config"
    return [
        config,
        str(models / "config.json"),
        "--moshi-weight",
        str(models / "moshi.safetensors"),
        "--mimi-weight",
        str(models / "mimi.safetensors"),
        "--tokenizer",
        str(models / "tok.model"),
    ]


@dataclass(frozen=True)
class Served:
    """A running server: its base URL and its log file."""

    base: str
    log: Path


@contextmanager
def _subprocess_server(args: list[str], port: int, log: Path) -> Iterator[Served]:
    """Start ``args`` in the duplex environment; yield once ``port`` accepts connections."""
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [str(duplex_python()), *args],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=os.environ | SERVER_ENV,
        )
        try:
            deadline = time.monotonic() + START_TIMEOUT_S
            while True:
                if process.poll() is not None:
                    raise PmcError(f"server exited ({process.returncode}): {log.read_text()}")
                with contextlib.suppress(OSError), socket.create_connection((HOST, port), 0.5):
                    break
                if time.monotonic() > deadline:
                    raise PmcError(f"server did not listen in {START_TIMEOUT_S:.0f} s: {log}")
                time.sleep(0.1)
            yield Served(f"ws://{HOST}:{port}", log)
        finally:
            process.terminate()
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextmanager
def stock_server(models: Path, log: Path) -> Iterator[Served]:
    """The unmodified ``moshi.server`` on CPU (through :mod:`pmc.duplex.stock`)."""
    port = free_port()
    args = ["-m", "pmc.duplex.stock", "--device", "cpu", "--host", HOST, "--port", str(port)]
    args += ["--static", "none", "--hf-repo", "local/none", *model_args(models, stock=True)]
    with _subprocess_server(args, port, log) as served:
        yield served


@contextmanager
def duplex_server(
    models: Path, log: Path, instances: int = 1, max_history_frames: int | None = None
) -> Iterator[Served]:
    """``pmc serve-duplex`` (``python -m pmc.duplex serve``) on CPU."""
    port = free_port()
    args = ["-m", "pmc.duplex", "serve", "--device", "cpu", "--host", HOST, "--port", str(port)]
    args += ["--instances", str(instances), *model_args(models, stock=False)]
    if max_history_frames is not None:
        args += ["--max-history-frames", str(max_history_frames)]
    with _subprocess_server(args, port, log) as served:
        yield served


class FakeMoshi:
    """The stock protocol without a model: every input frame is answered at once.

    After the handshake, each 1920 samples received are answered by one Opus frame of a
    440 Hz tone at 0.3 amplitude and the text piece ``" hi"``, the instant they are decoded;
    the answer to frame ``i`` therefore arrives right after frame ``i`` was sent. With
    ``answer_frames`` set, frames after that many are answered with silence and no text.
    """

    def __init__(self, answer_frames: int | None = None) -> None:
        self.answer_frames = answer_frames
        self.frames_received = 0

    async def _session(self, ws: ServerConnection) -> None:
        import sphn

        reader, writer = sphn.OpusStreamReader(SAMPLE_RATE), sphn.OpusStreamWriter(SAMPLE_RATE)
        t = np.arange(FRAME_SAMPLES) / SAMPLE_RATE
        tone = (0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
        quiet = np.zeros(FRAME_SAMPLES, dtype=np.float32)
        pending = np.zeros(0, dtype=np.float32)
        await ws.send(bytes([Kind.HANDSHAKE]))
        with contextlib.suppress(ConnectionClosed):
            async for message in ws:
                if not isinstance(message, bytes) or message[:1] != bytes([Kind.AUDIO]):
                    continue
                pcm = np.asarray(reader.append_bytes(message[1:]), dtype=np.float32)
                pending = np.concatenate([pending, pcm.reshape(-1)])
                while len(pending) >= FRAME_SAMPLES:
                    pending = pending[FRAME_SAMPLES:]
                    self.frames_received += 1
                    speak = self.answer_frames is None or self.frames_received <= self.answer_frames
                    page = bytes(writer.append_pcm(tone if speak else quiet))
                    if page:
                        await ws.send(bytes([Kind.AUDIO]) + page)
                    if speak:
                        await ws.send(bytes([Kind.TEXT]) + b" hi")

    @asynccontextmanager
    async def running(self) -> AsyncIterator[str]:
        """Serve on a free loopback port; yields the ``/api/chat`` URL."""
        async with serve(self._session, HOST, 0, compression=None) as server:
            port = next(iter(server.sockets)).getsockname()[1]
            yield f"ws://{HOST}:{port}/api/chat"


@dataclass(frozen=True)
class ListenerBehaviour:
    """What :class:`ListeningMoshi` does in every session.

    Attributes:
        silence_ms: Speech, then this much quiet: the user's turn has ended.
        reply_text: What it says then (the bundled voice, starting sharply; its text pieces go
            out with the frames that carry the audio).
        seed: Seeds where in its output frame each answer starts; each session draws from its
            own generator (this seed and the session's: the ``seed`` query parameter a card with
            ``send_seed`` sends, the rollout's own; else the session id).
        barge_in: Speech starting while it talks stops it, from the next output frame on (as a
            hosted API's barge-in does), so an answer to a short gap inside a turn is over
            before the turn goes on.
        step_ms: Output frame ``i`` leaves this long after input frame ``i`` was due (on a
            grid that starts with the handshake), or at once if that has passed
            (:data:`STEP_MS`).
    """

    silence_ms: float = LISTEN_SILENCE_MS
    reply_text: str = REPLY_TEXT
    seed: int = 0
    barge_in: bool = True
    step_ms: float = STEP_MS


@dataclass
class DuplexAnswer:
    """One answer of :class:`ListeningMoshi`.

    Attributes:
        turn_end_s: Where its endpointer heard the user's speech end, on the decoded input (which
            the codec delays by :data:`OPUS_DELAY_S`), on the session's stream clock.
        decided_s: The end of the input that decided it.
        frame: The output frame its speech starts in (output frame ``i`` answers input frame
            ``i``).
        offset: The sample of that frame where its speech starts (a seeded draw).
        sent_ns: When that frame went out, on the fake's monotonic clock.
        played_ns: Where a client that got each frame the moment it was sent starts playing
            that frame: at its arrival, or after the frame before it if that is still playing
            (the harness's playback, DESIGN "Clocks"): a frame the fake sent late delays every
            later one.
        said_s: How much of the speech went out (all of it unless a barge-in stopped it).
        speech_s: Where its speech begins on the stream clock: ``played_ns`` on the stream
            clock plus ``offset``. Set when the session ends, from the session's final origin.
            What a client decodes has the speech :data:`OPUS_DELAY_S` later still.
    """

    turn_end_s: float
    decided_s: float
    frame: int
    offset: int
    sent_ns: int = 0
    played_ns: int = 0
    said_s: float = 0.0
    speech_s: float | None = None

    @property
    def heard(self) -> tuple[float, float] | None:
        """Where its speech is on the stream clock, as sent (None before the session ended)."""
        if self.speech_s is None:
            return None
        return (self.speech_s, self.speech_s + self.said_s)


@dataclass
class ListenerSession:
    """What one :class:`ListeningMoshi` session heard and said.

    Attributes:
        session_id: Its number, in the order sessions opened.
        seed: The ``seed`` query parameter the client sent (PersonaPlex's; the rollout's seed),
            if any: which rollout the session was.
        frames: Input frames received (1920 samples each), as many output frames sent.
        origin_ns: The stream's origin on the fake's monotonic clock: the earliest of each
            frame's arrival less the audio received by then, as the hosted fakes estimate it
            (module :mod:`pmc.testing.hosted._server`). On one machine the harness's clock is
            the same monotonic clock, so this is comparable with a trace's ``t0_ns``.
        speech: The endpointer's decisions: ``(started|stopped, stream seconds)``.
        answers: What it said.
    """

    session_id: str
    seed: int | None = None
    frames: int = 0
    origin_ns: int | None = None
    speech: list[tuple[str, float]] = field(default_factory=list)
    answers: list[DuplexAnswer] = field(default_factory=list)


@dataclass
class _Saying:
    """An answer being spoken: its audio (lead-in, then speech), its words, how much went out."""

    answer: DuplexAnswer
    audio: FloatArray
    pieces: list[str]
    given: int = 0

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
                for event in endpointer.push(pcm):
                    record.speech.append((event.change.value, event.at / SAMPLE_RATE))
                    if event.change is Change.STOPPED and saying is None:
                        heard_end = (event.at / SAMPLE_RATE, event.decided / SAMPLE_RATE)
                    elif event.change is Change.STARTED:
                        heard_end = None  # the user went on before it answered
                        saying = None if behaviour.barge_in else saying
                pending = np.concatenate([pending, pcm])
                while len(pending) >= FRAME_SAMPLES:
                    pending = pending[FRAME_SAMPLES:]
                    starting = None
                    if heard_end is not None and saying is None:
                        offset = draws.randrange(FRAME_SAMPLES)
                        starting = DuplexAnswer(*heard_end, record.frames, offset)
                        record.answers.append(starting)
                        lead_in = np.zeros(starting.offset, dtype=np.float32)
                        audio = np.concatenate([lead_in, voice])
                        saying, heard_end = _Saying(starting, audio, _spread(words, audio)), None
                    frame, text = (np.zeros(FRAME_SAMPLES, dtype=np.float32), "")
                    if saying is not None:
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
                    if page:
                        await ws.send(bytes([Kind.AUDIO]) + page)
                    if text:
                        await ws.send(bytes([Kind.TEXT]) + text.encode())
        except ConnectionClosed:
            pass
        finally:
            origin_ns = record.origin_ns or 0
            for answer in record.answers:
                played_s = (answer.played_ns - origin_ns) / NS_PER_S
                answer.speech_s = round(played_s + answer.offset / SAMPLE_RATE, 6)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[str]:
        """Serve on a free loopback port; yields the ``/api/chat`` URL."""
        async with serve(self._session, HOST, 0, compression=None) as server:
            port = next(iter(server.sockets)).getsockname()[1]
            yield f"ws://{HOST}:{port}/api/chat"


def _spread(words: list[str], audio: FloatArray) -> list[str]:
    """The text piece of each output frame that carries ``audio``: its words, spread evenly."""
    frames = -(-len(audio) // FRAME_SAMPLES)
    pieces = [""] * frames
    for i, word in enumerate(words):
        pieces[i * frames // len(words)] += f" {word}"
    return pieces


@dataclass
class ListenerProcess:
    """A :class:`ListeningMoshi` served by a child process: its URL, then its records."""

    url: str
    sessions: list[ListenerSession] = field(default_factory=list)


@contextmanager
def listening_moshi_process(
    behaviour: ListenerBehaviour | None = None,
) -> Iterator[ListenerProcess]:
    """Serve a :class:`ListeningMoshi` from a child process; its records are read when it stops.

    In its own process (at a lower priority) it takes no interpreter time from the harness
    it is measured by, as a model server on another machine would not. It serves until its
    standard input closes, then prints every session's record as JSON.
    """
    spec = json.dumps(asdict(behaviour or ListenerBehaviour()))
    with serve_in_child("pmc.testing.duplex", spec, START_TIMEOUT_S) as child:
        fake = ListenerProcess(child.url)
        yield fake
    fake.sessions = [_session_from(row) for row in child.records]


def _session_from(data: dict[str, Any]) -> ListenerSession:
    """A session's record from its JSON form."""
    return ListenerSession(
        str(data["session_id"]),
        data["seed"],
        int(data["frames"]),
        data["origin_ns"],
        [(str(change), float(at)) for change, at in data["speech"]],
        [DuplexAnswer(**answer) for answer in data["answers"]],
    )


async def _serve_listener(behaviour: ListenerBehaviour) -> list[ListenerSession]:
    loop = asyncio.get_running_loop()
    closed = asyncio.Event()
    loop.add_reader(sys.stdin.fileno(), closed.set)
    fake = ListeningMoshi(behaviour)
    async with fake.running() as url:
        print(url, flush=True)
        await closed.wait()
    loop.remove_reader(sys.stdin.fileno())
    return fake.sessions


def main(argv: list[str] | None = None) -> None:
    """``python -m pmc.testing.duplex SPEC``: a :class:`ListeningMoshi` until stdin closes."""
    spec = json.loads((sys.argv[1:] if argv is None else argv)[0])
    behaviour = ListenerBehaviour(**spec)
    answer_audio(behaviour.reply_text)  # voiced before serving, never during a stream
    os.nice(10)  # the fake stands in for hardware elsewhere: the harness goes first
    sessions = asyncio.run(_serve_listener(behaviour))
    print(json.dumps([asdict(s) for s in sessions]), flush=True)


def pause_point(live_s: float, history_s: float = 0.0) -> Point:
    """A synthetic pause point: the pause at a third of the live stream, 0.4 s long."""
    stream_start = 10.0 + history_s
    pause = live_s / 3
    return Point(
        point_id="pause-synthetic",
        kind=PointKind.PAUSE,
        conversation_id="synthetic",
        user=Channel.A,
        system=Channel.B,
        history_start_conv_s=10.0,
        stream_start_conv_s=stream_start,
        boundary_conv_s=stream_start + pause,
        boundary_stream_s=pause,
        boundary_end_conv_s=stream_start + pause + 0.4,
        boundary_end_stream_s=pause + 0.4,
        stream_end_conv_s=stream_start + live_s,
    )


def _speechlike(seconds: float, seed: int) -> FloatArray:
    """Seeded noise with a syllable-rate envelope (4 Hz), about 0.1 RMS."""
    rng = np.random.default_rng(seed)
    n = round(seconds * SAMPLE_RATE)
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * 4 * np.arange(n) / SAMPLE_RATE)
    return (rng.standard_normal(n) * 0.14 * envelope).astype(np.float32)


async def drive_rollouts(
    card: SystemCard, sessions: int, live_s: float, history_s: float
) -> list[RolloutResult]:
    """``sessions`` rollouts at once against ``card``, a synthetic pause point each, real time.

    The history is ``history_s`` of speech-like noise on both sides with one system word a
    second, so a preloading server has something to force.
    """
    clock = RealClock()
    point = pause_point(live_s, history_s)
    words = tuple(TimedWord("okay", t + 0.1, t + 0.4) for t in range(int(history_s)))
    preload = Preload(
        "You are Sam.",
        _speechlike(history_s, 1),
        _speechlike(history_s, 2),
        [],
        system_words=words,
    )
    type(create_adapter(card, clock)).prepare(card)

    async def one(i: int) -> RolloutResult:
        job = RolloutJob(point, card, i, i, _speechlike(live_s, 10 + i), preload)
        return await run_rollout(job, create_adapter(card, clock), clock, ProtocolParams())

    return list(await asyncio.gather(*(one(i) for i in range(sessions))))


if __name__ == "__main__":
    main()
