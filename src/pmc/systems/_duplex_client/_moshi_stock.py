"""The stock Moshi protocol (``moshi/server.py``): live audio only, one session per server.

``GET /api/chat`` upgraded to a websocket; every message is binary, a kind byte then the payload
(:class:`pmc.duplex_server.Kind`). The server sends 0x00 once it has taken its single session
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

A card may name a pool of servers instead of one (``endpoint = "pool://NAME/api/duplex"``,
served by ``pmc serve-duplex --ray``): :meth:`MoshiStockAdapter.connect` then takes a free
replica for the session, kept in the trace as a ``pool`` signal, and :meth:`close` gives it
back (:mod:`pmc.systems._duplex_client._pool`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import urlencode, urlsplit, urlunsplit

from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from pmc.audio import FloatArray
from pmc.clock import Clock
from pmc.duplex_server import FRAME_SAMPLES, SAMPLE_RATE, Kind
from pmc.errors import PmcError
from pmc.systems._adapter import (
    EventKind,
    Preload,
    RetryReason,
    SystemEvent,
    TransportError,
    register_adapter,
)
from pmc.systems._card import SystemCard
from pmc.systems._duplex_client import _opus, _pool
from pmc.systems._websocket import WebsocketAdapter


@dataclass(frozen=True)
class MoshiParams:
    """A Moshi-protocol card's ``[params]``."""

    identity_prompt: bool = False
    """Send the point's identity prompt (PersonaPlex's ``text_prompt``)."""
    send_seed: bool = False
    """Send the rollout's seed (PersonaPlex's ``seed``)."""
    query: dict[str, Any] = field(default_factory=dict)
    """Fixed query parameters of the endpoint (a PersonaPlex voice prompt)."""


class MoshiStockAdapter(WebsocketAdapter):
    """A Moshi-protocol session: Opus frames out; Opus audio and text pieces back.

    The websocket's opening handshake has the shared limit; the Moshi handshake byte that
    follows is bounded by the harness's own preload timeout. Messages that come before that
    byte (the preload route's report) wait in the backlog for :meth:`events`.
    """

    VERSION = "1"
    EXTRA = "duplex-client"  # Opus through sphn (_opus.INSTALL_HINT)
    PARAMS: ClassVar[type[Any]] = MoshiParams
    params: MoshiParams

    def __init__(self, card: SystemCard, clock: Clock) -> None:
        super().__init__(card, clock)
        self._encoder: _opus.OpusEncoder | None = None
        self._decoder: _opus.OpusDecoder | None = None
        self._lease: _pool.Lease | None = None
        self._failed = False

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
        pool = _pool.pool_of(card)
        if pool is not None:
            _pool.registry(pool)  # joins the cluster and finds the pool before any stream

    def _prompt_query(self, preload: Preload) -> dict[str, str]:
        """PersonaPlex's query parameters, where the card asks for them."""
        query = {}
        if self.params.identity_prompt:
            query["text_prompt"] = preload.identity_prompt
        if self.params.send_seed:
            query["seed"] = str(preload.seed)
        return query

    def _url(self, extra: dict[str, str]) -> str:
        """The endpoint with the card's fixed query parameters and ``extra``."""
        endpoint = self.endpoint()
        fixed = dict(self.params.query)
        query = {str(k): str(v) for k, v in fixed.items()} | extra
        if not query:
            return endpoint
        parts = urlsplit(endpoint)
        joined = "&".join(p for p in (parts.query, urlencode(query)) if p)
        return urlunsplit(parts._replace(query=joined))

    def endpoint(self) -> str:
        """The card's endpoint; on a pool card, on the replica this session holds."""
        if self._lease is not None:
            return self._lease.url
        return super().endpoint()

    def fail(
        self, what: str, retry: RetryReason | None = None, retry_after_s: float | None = None
    ) -> TransportError:
        """A transport error; the session is marked failed, for the pool's registry."""
        self._failed = True
        return super().fail(what, retry, retry_after_s)

    async def connect(self) -> None:
        """Set up the codecs and, on a pool card, take a replica (waits while all are busy).

        The websocket opens in :meth:`preload`, which has the prompt.
        """
        self._encoder = _opus.OpusEncoder(self.card.sample_rate)
        self._decoder = _opus.OpusDecoder(self.card.sample_rate)
        pool = _pool.pool_of(self.card)
        if pool is not None:
            self._lease = await _pool.take(self.card, pool, self.fail)
            detail = {"type": "pool", "pool": pool, "replica": self._lease.replica}
            self._backlog.append(SystemEvent(EventKind.SIGNAL, self.clock.now_ns(), detail=detail))

    async def close(self) -> None:
        """Close the session; a pool card's replica goes back to the pool, failed or not."""
        lease, self._lease = self._lease, None
        try:
            await super().close()
        finally:
            if lease is not None:
                await _pool.give_back(lease, self._failed)

    def socket_options(self, url: str) -> dict[str, Any]:
        """No pings: the stock server runs inference inside its event loop."""
        return {"ping_interval": None}

    async def preload(self, preload: Preload) -> None:
        """Open the session and wait for the handshake (after the server ran any prompt)."""
        ws = await self.open(self._url(self._prompt_query(preload)))
        await self._until_handshake(ws)

    async def _until_handshake(self, ws: ClientConnection) -> None:
        """Read until the handshake byte; then start the reader that stamps every message."""
        while True:
            try:
                message = await ws.recv()
            except ConnectionClosed as exc:
                raise self.fail(f"closed before the handshake ({exc})") from exc
            stamp = self.clock.now_ns()
            if isinstance(message, str) or not message:
                raise self.fail("unexpected message before the handshake")
            kind = message[0]
            if kind == Kind.HANDSHAKE:
                break
            if kind == Kind.ERROR:
                reason = message[1:].decode("utf-8", "replace")
                raise self.fail(f"the server refused the session: {reason}")
            self._backlog.append(self._before_handshake(stamp, kind, message[1:]))
        self.start_reader()

    def _before_handshake(self, arrival_ns: int, kind: int, payload: bytes) -> SystemEvent:
        """A message the stock protocol never sends before its handshake."""
        raise self.fail(f"unexpected message kind {kind} before the handshake")

    async def send_frame(self, samples: FloatArray) -> None:
        """Send one frame as Ogg-Opus (nothing while the encoder is still buffering)."""
        if self._ws is None or self._encoder is None:
            raise self.fail("not connected")
        payload = self._encoder.encode(samples)
        if payload:
            await self.send(bytes([Kind.AUDIO]) + payload)

    async def end_of_input(self) -> None:
        """Nothing to signal: a full-duplex model finds the turn's end itself."""

    def decode(self, arrival_ns: int, message: str | bytes) -> list[SystemEvent]:
        """One message as an event; Opus pages that complete no PCM yet give none."""
        if isinstance(message, str):
            message = message.encode()
        if not message or self._decoder is None:
            return []
        kind, payload = message[0], message[1:]
        if kind == Kind.AUDIO:
            pcm = self._decoder.decode(payload)
            return [SystemEvent(EventKind.AUDIO, arrival_ns, pcm)] if len(pcm) else []
        if kind == Kind.TEXT:
            text = payload.decode("utf-8", "replace")
            return [SystemEvent(EventKind.TEXT, arrival_ns, text=text)]
        if kind == Kind.ERROR:
            reason = payload.decode("utf-8", "replace")
            return [SystemEvent(EventKind.ERROR, arrival_ns, detail={"reason": reason})]
        detail: dict[str, Any] = {"kind": kind, "bytes": len(payload)}
        return [SystemEvent(EventKind.SIGNAL, arrival_ns, detail=detail)]


register_adapter("moshi-stock")(MoshiStockAdapter)
