"""The stock Moshi protocol (``moshi/server.py``): live audio only, one session per server.

``GET /api/chat`` upgraded to a websocket; every message is binary, a kind byte then the payload
(:class:`pmc.duplex._wire.Kind`). The server sends 0x00 once it has taken its single session
lock, then for every 1920-sample frame it receives (after its first) one Ogg-Opus audio page
set (0x01) and at most one text piece (0x02). The client sends only 0x01. The model steps only
when input arrives, so the harness streams silence frames after the live audio (the duplex
protocol does that for every full-duplex card).

PersonaPlex's server speaks the same protocol with query parameters (``text_prompt``, required,
wrapped by the server in ``<system>`` tags; ``voice_prompt``, required; ``seed``) and sends the
handshake only after it has run those prompts. That is why the websocket is opened in
:meth:`MoshiStockAdapter.preload` (the identity prompt and the seed arrive there) and the
handshake is awaited before it returns: the harness takes the stream clock's origin right after
the preload, so the handshake starts the clock.

Card params (all optional):
    identity_prompt: Send the point's identity prompt as ``text_prompt`` (PersonaPlex). Stock
        Moshi takes no prompt, so its card leaves this false.
    send_seed: Send the rollout's seed as ``seed`` (PersonaPlex).
    query: Further fixed query parameters, e.g. ``{voice_prompt = "NATF2.pt"}``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, ConnectionClosedOK, InvalidHandshake, InvalidURI

from pmc.audio import FloatArray
from pmc.clock import Clock
from pmc.duplex._wire import FRAME_SAMPLES, SAMPLE_RATE, Kind
from pmc.errors import PmcError
from pmc.systems._adapter import (
    EventKind,
    Preload,
    SystemAdapter,
    SystemEvent,
    TransportError,
    register_adapter,
)
from pmc.systems._card import SystemCard
from pmc.systems._duplex import _opus

OPEN_TIMEOUT_S = 10.0
"""How long the websocket's opening handshake may take (websockets' own default). The Moshi
handshake byte that follows is bounded by the harness's own preload timeout."""
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""Largest message accepted from the server; Opus pages are a few hundred bytes each."""

_Received = tuple[int, bytes]
"""A message and its receipt stamp."""


class MoshiStockAdapter(SystemAdapter):
    """A Moshi-protocol session: Opus frames out; Opus audio and text pieces back."""

    VERSION = "1"

    def __init__(self, card: SystemCard, clock: Clock) -> None:
        super().__init__(card, clock)
        self._ws: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._inbox: asyncio.Queue[_Received | TransportError | None] = asyncio.Queue()
        self._encoder: _opus.OpusEncoder | None = None
        self._decoder: _opus.OpusDecoder | None = None
        self._early: list[SystemEvent] = []
        """Messages that came before the handshake (the preload route's report)."""

    @classmethod
    def prepare(cls, card: SystemCard) -> None:
        """Check, before any stream starts, that sphn is there and the card's audio fits Mimi."""
        _opus.require()
        if card.sample_rate != SAMPLE_RATE or card.frame_samples != FRAME_SAMPLES:
            raise PmcError(
                f"system card {card.name}: moshi-family models take {SAMPLE_RATE} Hz audio in "
                f"{FRAME_SAMPLES}-sample (80 ms) frames; set sample_rate = {SAMPLE_RATE} and "
                "frame_ms = 80"
            )

    def _name(self) -> str:
        return f"system card {self.card.name}"

    def _prompt_query(self, preload: Preload) -> dict[str, str]:
        """PersonaPlex's query parameters, where the card asks for them."""
        query = {}
        if self.card.params.get("identity_prompt", False):
            query["text_prompt"] = preload.identity_prompt
        if self.card.params.get("send_seed", False):
            query["seed"] = str(preload.seed)
        return query

    def _url(self, extra: dict[str, str]) -> str:
        """The endpoint with the card's fixed query parameters and ``extra``."""
        endpoint = self.card.endpoint
        if not endpoint:
            raise TransportError(f"{self._name()}: no endpoint to connect to")
        fixed = dict(self.card.params.get("query", {}))
        query = {str(k): str(v) for k, v in fixed.items()} | extra
        if not query:
            return endpoint
        parts = urlsplit(endpoint)
        joined = "&".join(p for p in (parts.query, urlencode(query)) if p)
        return urlunsplit(parts._replace(query=joined))

    async def connect(self) -> None:
        """Set up the codecs; the websocket opens in :meth:`preload`, which has the prompt."""
        self._encoder = _opus.OpusEncoder(self.card.sample_rate)
        self._decoder = _opus.OpusDecoder(self.card.sample_rate)

    async def _open(self, url: str) -> ClientConnection:
        try:
            self._ws = await connect(
                url,
                compression=None,  # Opus does not deflate
                proxy=None,  # a local server is reached directly, whatever the environment
                open_timeout=OPEN_TIMEOUT_S,
                max_size=MAX_MESSAGE_BYTES,
                ping_interval=None,  # the stock server runs inference inside its event loop
            )
        except (OSError, TimeoutError, InvalidURI, InvalidHandshake) as exc:
            raise TransportError(f"{self._name()}: cannot connect to {url} ({exc})") from exc
        return self._ws

    async def preload(self, preload: Preload) -> None:
        """Open the session and wait for the handshake (after the server ran any prompt)."""
        ws = await self._open(self._url(self._prompt_query(preload)))
        await self._until_handshake(ws)

    async def _until_handshake(self, ws: ClientConnection) -> None:
        """Read until the handshake byte; then start the reader that stamps every message."""
        while True:
            try:
                message = await ws.recv()
            except ConnectionClosed as exc:
                raise TransportError(
                    f"{self._name()}: closed before the handshake ({exc})"
                ) from exc
            stamp = self.clock.now_ns()
            if isinstance(message, str) or not message:
                raise TransportError(f"{self._name()}: unexpected message before the handshake")
            kind = message[0]
            if kind == Kind.HANDSHAKE:
                break
            if kind == Kind.ERROR:
                reason = message[1:].decode("utf-8", "replace")
                raise TransportError(f"{self._name()}: the server refused the session: {reason}")
            self._early.append(self._before_handshake(stamp, kind, message[1:]))
        self._reader = asyncio.get_running_loop().create_task(self._read(ws))

    def _before_handshake(self, arrival_ns: int, kind: int, payload: bytes) -> SystemEvent:
        """A message the stock protocol never sends before its handshake."""
        raise TransportError(f"{self._name()}: unexpected message kind {kind} before the handshake")

    async def _read(self, ws: ClientConnection) -> None:
        """Stamp each message the moment the socket hands it over, then queue it undecoded."""
        try:
            while True:
                message = await ws.recv()
                stamp = self.clock.now_ns()
                if isinstance(message, str):
                    message = message.encode()
                self._inbox.put_nowait((stamp, message))
        except ConnectionClosedOK:
            self._inbox.put_nowait(None)
        except ConnectionClosed as exc:
            self._inbox.put_nowait(TransportError(f"{self._name()}: connection lost ({exc})"))

    async def send_frame(self, samples: FloatArray) -> None:
        """Send one frame as Ogg-Opus (nothing while the encoder is still buffering)."""
        if self._ws is None or self._encoder is None:
            raise TransportError(f"{self._name()}: not connected")
        payload = self._encoder.encode(samples)
        if not payload:
            return
        try:
            await self._ws.send(bytes([Kind.AUDIO]) + payload)
        except ConnectionClosed as exc:
            raise TransportError(f"{self._name()}: connection lost while sending ({exc})") from exc

    async def end_of_input(self) -> None:
        """Nothing to signal: a full-duplex model finds the turn's end itself."""

    async def events(self) -> AsyncIterator[SystemEvent]:
        """Decoded messages in arrival order, until the connection closes.

        Raises:
            TransportError: The connection was lost.
        """
        for early in self._early:
            yield early
        self._early = []
        while True:
            item = await self._inbox.get()
            if item is None:
                return
            if isinstance(item, TransportError):
                raise item
            event = self._decode(*item)
            if event is not None:
                yield event

    def _decode(self, arrival_ns: int, message: bytes) -> SystemEvent | None:
        """One message as an event; Opus pages that complete no PCM yet give none."""
        if not message or self._decoder is None:
            return None
        kind, payload = message[0], message[1:]
        if kind == Kind.AUDIO:
            pcm = self._decoder.decode(payload)
            return SystemEvent(EventKind.AUDIO, arrival_ns, pcm) if len(pcm) else None
        if kind == Kind.TEXT:
            return SystemEvent(EventKind.TEXT, arrival_ns, text=payload.decode("utf-8", "replace"))
        if kind == Kind.ERROR:
            reason = payload.decode("utf-8", "replace")
            return SystemEvent(EventKind.ERROR, arrival_ns, detail={"reason": reason})
        detail: dict[str, Any] = {"kind": kind, "bytes": len(payload)}
        return SystemEvent(EventKind.SIGNAL, arrival_ns, detail=detail)

    async def close(self) -> None:
        """Close the websocket (the server then frees its session lock) and stop the reader."""
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            if not self._reader.done():
                self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        self._inbox.put_nowait(None)


register_adapter("moshi-stock")(MoshiStockAdapter)
