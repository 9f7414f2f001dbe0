"""The bot's web app: one FastAPI websocket route, a Pipecat pipeline per call, on uvicorn."""

from __future__ import annotations

import itertools
from pathlib import Path

import uvicorn
from fastapi import FastAPI, WebSocket

from pmc.testing.pipecat_bot._log import BotLog
from pmc.testing.pipecat_bot._pipeline import run_call
from pmc.testing.pipecat_bot._reply import reply_pcm

HOST = "127.0.0.1"
PATH = "/media-stream"


def build_app(log: BotLog) -> FastAPI:
    """The app: ``PATH`` takes Twilio Media Streams calls; the reply is voiced before any call."""
    app = FastAPI()
    pcm = reply_pcm()
    numbers = itertools.count(1)

    @app.websocket(PATH)
    async def media_stream(websocket: WebSocket) -> None:
        await websocket.accept()
        await run_call(websocket, log, next(numbers), pcm)

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
