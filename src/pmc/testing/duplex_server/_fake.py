"""A stand-in for the stock Moshi protocol whose answers come at known instants."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import numpy as np
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from pmc.duplex_server import FRAME_SAMPLES, SAMPLE_RATE, Kind
from pmc.testing.duplex_server._env import HOST


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
