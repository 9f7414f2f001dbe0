"""Full-duplex test and bench helpers: the duplex environment, tiny models, servers, a fake.

The Moshi servers need PyTorch and moshi, which live in their own environment
(``.venv-duplex``, built by ``make``); from pmc's own environment they run as subprocesses of
that environment's Python. :class:`FakeMoshi` is an in-process stand-in for the stock protocol
(websockets and sphn, no model) whose answers come at known instants: each input frame is
answered at once with one 80 ms frame of tone and a text piece.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from pmc.audio import FloatArray
from pmc.clock import RealClock
from pmc.corpus import Channel
from pmc.duplex._wire import FRAME_SAMPLES, SAMPLE_RATE, Kind
from pmc.errors import PmcError
from pmc.harness._protocol import ProtocolParams
from pmc.harness._rollout import RolloutJob, RolloutResult, run_rollout
from pmc.points import Point, PointKind
from pmc.systems import Preload, SystemCard, TimedWord, create_adapter

HOST = "127.0.0.1"
REPO = Path(__file__).resolve().parents[3]
"""The checkout (this file is ``src/pmc/testing/duplex.py`` in an editable install)."""
DUPLEX_VENV = REPO / ".venv-duplex"
START_TIMEOUT_S = 120.0
"""A server loads its model before it listens: about 2 s alone, longer on busy cores."""
STOP_TIMEOUT_S = 10.0
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
