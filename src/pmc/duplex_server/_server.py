"""The duplex server's routes: stock-compatible ``/api/chat`` and the preload route.

aiohttp (moshi's own dependency). Each model instance (:class:`Engine`) serves one session at a
time: a session takes a free instance from the pool and waits while there is none, as the stock
server waits on its single lock; several instances per host serve that many sessions at once,
each stepping on its own thread.

- ``GET /api/chat`` (websocket): the stock Moshi protocol. Query ``text_prompt`` (forced as
  PersonaPlex's ``<system>`` prompt before the handshake) and ``seed`` are honoured;
  ``voice_prompt`` is accepted and ignored (voice prompts are not supported).
- ``GET /api/duplex`` (websocket): 0x10 header, 0x11/0x12 history PCM16, 0x13 commit; the server
  forces the history, answers 0x14 with what it forced, then 0x00, then the stock live protocol.
- ``GET /api/stats``: JSON of the live steps' wall times per instance (``pmc bench duplex``).

A session's seed seeds PyTorch's global generator, which moshi's sampling draws from: with one
instance per process a rollout's seed reproduces its sampling; with several, concurrent
sessions interleave their draws and do not.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import statistics
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pmc.duplex_server._align import TimedText
from pmc.duplex_server._engine import Engine, FloatArray, PrimeReport, Sampling, Weights
from pmc.duplex_server._wire import DEFAULT_SEED, FRAME_SAMPLES, SAMPLE_RATE, Kind

try:
    import sphn
    from aiohttp import WSMsgType, web
except ImportError as _exc:  # pragma: no cover
    from pmc.duplex_server._wire import INSTALL_HINT

    raise ImportError(f"{_exc}. {INSTALL_HINT}") from _exc

log = logging.getLogger("pmc.duplex_server")

PRELOAD_VERSIONS = (1,)
"""Header versions this server reads (pmc.systems._duplex_client._preloaded.PRELOAD_VERSION)."""
MAX_MESSAGE_BYTES = 8 * 1024 * 1024
"""Largest message accepted: the client's history chunks are 1 MiB."""


@dataclass(frozen=True)
class ServeConfig:
    """How ``pmc serve-duplex`` runs.

    Attributes:
        host: Address to listen on.
        port: Port to listen on.
        weights: The model's files.
        device: ``cuda`` or ``cpu``.
        dtype: ``bfloat16`` (moshi's default on GPU) or ``float32``.
        instances: Model copies, each serving one session at a time.
        max_history_frames: The history cap in 80 ms frames (None: the LM's context).
        sampling: Sampling temperatures and top-k.
        seed: Seed of sessions that bring none.
    """

    host: str
    port: int
    weights: Weights
    device: str = "cuda"
    dtype: str = "bfloat16"
    instances: int = 1
    max_history_frames: int | None = None
    sampling: Sampling = field(default_factory=Sampling)
    seed: int = DEFAULT_SEED


class _Pool:
    """Free instances; taking one is the per-instance lock."""

    def __init__(self, engines: list[Engine]) -> None:
        self.engines = engines
        self._free: asyncio.Queue[Engine] = asyncio.Queue()
        for engine in engines:
            self._free.put_nowait(engine)

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[Engine]:
        engine = await self._free.get()
        try:
            yield engine
        finally:
            self._free.put_nowait(engine)


class DuplexServer:
    """The routes over a pool of model instances."""

    def __init__(self, config: ServeConfig, engines: list[Engine]) -> None:
        self.config = config
        self.pool = _Pool(engines)

    def app(self) -> web.Application:
        """The aiohttp application."""
        app = web.Application(client_max_size=MAX_MESSAGE_BYTES)
        app.router.add_get("/api/chat", self.chat)
        app.router.add_get("/api/duplex", self.duplex)
        app.router.add_get("/api/stats", self.stats)
        return app

    async def _run(self, engine: Engine, work: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(engine.executor, work, *args)

    async def chat(self, request: web.Request) -> web.WebSocketResponse:
        """The stock protocol, with PersonaPlex's prompt and seed parameters."""
        ws = web.WebSocketResponse(max_msg_size=MAX_MESSAGE_BYTES, heartbeat=None)
        await ws.prepare(request)
        prompt = request.query.get("text_prompt", "")
        seed = _seed(request.query.get("seed"), self.config.seed)
        async with self.pool.session() as engine:
            await self._run(engine, engine.reset, seed)
            if prompt:
                empty = np.zeros(0, dtype=np.float32)
                await self._run(engine, engine.prime, prompt, empty, empty, [])
            await self._live(ws, engine)
        return ws

    async def duplex(self, request: web.Request) -> web.WebSocketResponse:
        """The preload route: read the history, force it, then go live."""
        ws = web.WebSocketResponse(max_msg_size=MAX_MESSAGE_BYTES, heartbeat=None)
        await ws.prepare(request)
        try:
            header, user, system = await _read_history(ws)
        except ValueError as exc:
            await ws.send_bytes(bytes([Kind.ERROR]) + str(exc).encode())
            await ws.close()
            return ws
        words: list[TimedText] = [(str(t), float(s), float(e)) for t, s, e in header["words"]]
        cap = header.get("max_history_frames")
        async with self.pool.session() as engine:
            await self._run(engine, engine.reset, _seed(header.get("seed"), self.config.seed))
            report: PrimeReport = await self._run(
                engine, engine.prime, str(header.get("text_prompt", "")), user, system, words, cap
            )
            log.info("instance %d primed: %s", engine.index, report.to_dict())
            await ws.send_bytes(bytes([Kind.PRIMED]) + json.dumps(report.to_dict()).encode())
            await self._live(ws, engine)
        return ws

    async def _live(self, ws: web.WebSocketResponse, engine: Engine) -> None:
        """Handshake, then one model step per 1920 samples received, answers sent at once."""
        reader = sphn.OpusStreamReader(SAMPLE_RATE)
        writer = sphn.OpusStreamWriter(SAMPLE_RATE)
        await ws.send_bytes(bytes([Kind.HANDSHAKE]))
        pending = np.zeros(0, dtype=np.float32)
        async for message in ws:
            if message.type != WSMsgType.BINARY or not message.data:
                if message.type in (WSMsgType.ERROR, WSMsgType.CLOSE):
                    break
                continue
            data: bytes = message.data
            if data[0] != Kind.AUDIO:
                continue  # the stock server ignores other kinds too
            pcm = np.asarray(reader.append_bytes(data[1:]), dtype=np.float32).reshape(-1)
            pending = np.concatenate([pending, pcm])
            while len(pending) >= FRAME_SAMPLES:
                frame, pending = pending[:FRAME_SAMPLES], pending[FRAME_SAMPLES:]
                audio, text = await self._run(engine, engine.step, frame)
                if audio is not None:
                    payload = bytes(writer.append_pcm(audio))
                    if payload:
                        await ws.send_bytes(bytes([Kind.AUDIO]) + payload)
                if text:
                    await ws.send_bytes(bytes([Kind.TEXT]) + text.encode())

    async def stats(self, request: web.Request) -> web.Response:
        """Live step times per instance: count, mean, p50, p95, max in ms."""
        rows = []
        for engine in self.pool.engines:
            ms = sorted(engine.times.ms)
            rows.append(
                {
                    "instance": engine.index,
                    "steps": len(ms),
                    "mean_ms": statistics.fmean(ms) if ms else None,
                    "p50_ms": ms[len(ms) // 2] if ms else None,
                    "p95_ms": ms[min(len(ms) - 1, int(len(ms) * 0.95))] if ms else None,
                    "max_ms": ms[-1] if ms else None,
                }
            )
        return web.json_response({"instances": rows})


def _seed(value: Any, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except (TypeError, ValueError):
        return default


async def _read_history(ws: web.WebSocketResponse) -> tuple[dict[str, Any], FloatArray, FloatArray]:
    """The header and both history tracks, up to the commit.

    Raises:
        ValueError: The client broke the preload protocol (said to it before closing).
    """
    header: dict[str, Any] | None = None
    parts: dict[int, list[bytes]] = {Kind.USER_HISTORY: [], Kind.SYSTEM_HISTORY: []}
    async for message in ws:
        if message.type != WSMsgType.BINARY or not message.data:
            break
        data: bytes = message.data
        kind, payload = data[0], data[1:]
        if kind == Kind.PRELOAD:
            header = json.loads(payload)
            if not isinstance(header, dict) or header.get("version") not in PRELOAD_VERSIONS:
                raise ValueError(f"unknown preload header (this server reads {PRELOAD_VERSIONS})")
        elif kind in parts:
            parts[kind].append(payload)
        elif kind == Kind.COMMIT:
            break
        else:
            raise ValueError(f"unexpected message kind {kind} during the preload")
    if header is None:
        raise ValueError("no preload header before the commit")
    user, system = (_pcm16(b"".join(parts[k])) for k in (Kind.USER_HISTORY, Kind.SYSTEM_HISTORY))
    for name, track, key in (("user", user, "user_samples"), ("system", system, "system_samples")):
        if len(track) != int(header.get(key, -1)):
            raise ValueError(f"the {name} history has {len(track)} samples, not {header.get(key)}")
    return header, user, system


def _pcm16(data: bytes) -> FloatArray:
    return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0


def load_engines(config: ServeConfig) -> list[Engine]:
    """Load every instance (before the server listens: loading is slow)."""
    return [
        Engine(
            config.weights,
            config.device,
            config.dtype,
            config.sampling,
            config.max_history_frames,
            index=i,
        )
        for i in range(config.instances)
    ]


def serve(config: ServeConfig) -> None:
    """Load the models and serve until interrupted."""
    engines = load_engines(config)
    for engine in engines:
        engine.silence_step_ms(4)  # warm-up, as the stock server does
        engine.times.ms.clear()
    log.info("serving %d instance(s) on http://%s:%d", len(engines), config.host, config.port)
    web.run_app(
        DuplexServer(config, engines).app(),
        host=config.host,
        port=config.port,
        print=lambda line: log.info("%s", line),
        handle_signals=True,
    )
