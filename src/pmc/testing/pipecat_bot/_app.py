"""The bot's web app: one FastAPI websocket route per serializer, a Pipecat pipeline per call."""

from __future__ import annotations

import itertools
from pathlib import Path

import uvicorn
from fastapi import FastAPI, WebSocket

from pmc.testing.pipecat_bot._log import BotLog
from pmc.testing.pipecat_bot._pipeline import run_protobuf_call, run_twilio_call
from pmc.testing.pipecat_bot._process import HOST, PATHS, Wire
from pmc.testing.pipecat_bot._reply import PROTOBUF_RATE, RATE, reply_pcm


def build_app(log: BotLog) -> FastAPI:
    """The app: Twilio Media Streams calls and protobuf-frame calls, each on its route.

    The reply is voiced at both rates before any call; calls are numbered across routes.
    """
    app = FastAPI()
    twilio_pcm = reply_pcm(rate=RATE)
    protobuf_pcm = reply_pcm(rate=PROTOBUF_RATE)
    numbers = itertools.count(1)

    @app.websocket(PATHS[Wire.TWILIO])
    async def media_stream(websocket: WebSocket) -> None:
        await websocket.accept()
        await run_twilio_call(websocket, log, next(numbers), twilio_pcm)

    @app.websocket(PATHS[Wire.PROTOBUF])
    async def frames(websocket: WebSocket) -> None:
        await websocket.accept()
        await run_protobuf_call(websocket, log, next(numbers), protobuf_pcm)

    return app


def serve(port: int, log_path: Path) -> None:
    """Serve on ``HOST:port`` until SIGINT or SIGTERM."""
    log = BotLog(log_path)
    try:
        uvicorn.run(
            build_app(log), host=HOST, port=port, ws="websockets-sansio", log_level="warning"
        )
    finally:
        log.close()
