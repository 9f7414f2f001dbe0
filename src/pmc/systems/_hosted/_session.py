"""What every hosted real-time API adapter shares: the socket, the key, receipt stamps, playback.

A hosted session is one websocket of JSON messages (docs/wire-formats.md section 6).
The socket, the receipt stamps and the queue are those of every websocket adapter
(:class:`~pmc.systems._websocket.WebsocketAdapter`). Each dialect says how to open the session,
send history and audio, end the input, and what its server's messages mean.

The API key is read from the environment variable the card names, when the socket opens, and
goes only into a request header: never into the URL, an exception, a log line or the trace.
The websocket library logs request headers at DEBUG, so its logger here is held at INFO.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from abc import abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit

from pmc.audio import FloatArray
from pmc.clock import NS_PER_S, Clock
from pmc.errors import PmcError
from pmc.systems._adapter import EventKind, Preload, SystemEvent, TransportError
from pmc.systems._card import SystemCard
from pmc.systems._hosted._pcm import DeltaDecoder, InputResampler, encode
from pmc.systems._websocket import WebsocketAdapter

HANDSHAKE_TIMEOUT_S = 10.0
"""How long opening the socket, and then the server's acknowledgement of the session settings,
may each take (the paper's adapters wait 10 s for ``session.updated``; docs/decisions.md section 1).
A card may set ``params.handshake_timeout_s``."""
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
"""Hosts reached directly, never through a proxy from the environment (the test fakes)."""

WIRE_LOG = logging.getLogger("pmc.systems.hosted.wire")
"""The websocket library's logger for hosted sessions. Held at INFO: at DEBUG the library logs
every request header, the Authorization header with the key among them."""
WIRE_LOG.setLevel(logging.INFO)


def api_key(card: SystemCard) -> str:
    """The key from the environment variable the card names; a missing one names the variable."""
    name = card.api_key_env
    if not name:
        raise PmcError(f"system card {card.name}: a hosted system needs api_key_env")
    value = os.environ.get(name, "")
    if not value:
        raise PmcError(f"system card {card.name}: set the environment variable {name} to its key")
    return value


@dataclass(frozen=True)
class HostedParams:
    """What every hosted card's ``[params]`` may set."""

    handshake_timeout_s: float | None = None
    """How long the session may take to open (None: :data:`HANDSHAKE_TIMEOUT_S`)."""
    history: Literal["text", "audio"] = "text"
    """How the history reaches the model: as text messages, or as the recorded audio."""
    assistant_history: Literal["text", "audio"] = "audio"
    """With ``history = "audio"``: the system seat's own past turns as audio or as text."""


class HostedAdapter(WebsocketAdapter):
    """A hosted real-time API over one websocket of JSON messages.

    Subclasses give the dialect: how to authenticate, the session settings and the message that
    acknowledges them, the history messages, the audio message, the end of input, and what each
    server message means (:meth:`translate`). Card settings read here: ``endpoint``,
    ``api_key_env`` and ``params.handshake_timeout_s``.
    """

    HEARS_WHILE_SPEAKING = False  # told where input ends, it hears nothing after it
    INPUT_RATE: ClassVar[int] = 24_000
    """The rate live audio is sent at, unless :meth:`wire_input_rate` says otherwise."""
    OUTPUT_RATE: ClassVar[int] = 24_000
    """The rate the server's audio comes at (the card's ``sample_rate`` must equal it)."""
    PARAMS: ClassVar[type[Any]] = HostedParams
    params: HostedParams

    def __init__(self, card: SystemCard, clock: Clock) -> None:
        super().__init__(card, clock)
        self.check_card(card)
        timeout_s = self.params.handshake_timeout_s
        self.timeout_s = float(HANDSHAKE_TIMEOUT_S if timeout_s is None else timeout_s)
        self.endpointing = True
        """Whether the server's turn detection decides the live turn (see Preload)."""
        self.decoder = DeltaDecoder()
        self.input_rate = self.wire_input_rate(card)
        self._resampler = InputResampler(card.sample_rate, self.input_rate)
        self._playing_until_ns = 0
        """Where the client's playback queue ends, on the harness clock (as the trace plays)."""

    # -- the dialect ------------------------------------------------------------------------

    @classmethod
    def wire_input_rate(cls, card: SystemCard) -> int:
        """The rate live audio goes out at (fixed by the API unless a dialect says otherwise)."""
        return cls.INPUT_RATE

    @abstractmethod
    def auth_headers(self, key: str) -> dict[str, str]:
        """The request headers that carry ``key``."""

    @abstractmethod
    def session_messages(self, preload: Preload) -> list[dict[str, Any]]:
        """What opens the session: its settings (instructions, audio formats, turn detection)."""

    @abstractmethod
    def is_ack(self, message: dict[str, Any]) -> bool:
        """Whether ``message`` acknowledges the session settings."""

    @abstractmethod
    def history_messages(self, preload: Preload) -> list[dict[str, Any]]:
        """The completed turns of the history, as the dialect's text messages."""

    @abstractmethod
    def audio_message(self, data: str) -> dict[str, Any]:
        """One chunk of live audio (base64 PCM16 at :attr:`input_rate`)."""

    @abstractmethod
    def translate(self, arrival_ns: int, message: dict[str, Any]) -> list[SystemEvent]:
        """What one server message means; raises TransportError for one it cannot read."""

    # -- the session ------------------------------------------------------------------------

    @classmethod
    def check_card(cls, card: SystemCard) -> None:
        """A card this adapter cannot run is an error that names it."""
        if card.sample_rate != cls.OUTPUT_RATE:
            raise PmcError(
                f"system card {card.name}: sample_rate must be {cls.OUTPUT_RATE} "
                f"(the rate {cls.__name__} answers at)"
            )
        if not card.endpoint:
            raise PmcError(f"system card {card.name}: a hosted system needs an endpoint")

    @classmethod
    def prepare(cls, card: SystemCard) -> None:
        """Check the card and that its key's variable is set, before any stream starts."""
        cls.check_card(card)
        api_key(card)

    def session_key(self) -> str:
        """The key a session opens with; an unset variable is a transport error naming it."""
        try:
            return api_key(self.card)
        except PmcError as exc:
            raise TransportError(str(exc)) from None

    def socket_options(self, url: str) -> dict[str, Any]:
        """The key in a header, the card's handshake limit, the environment's proxy if remote."""
        key = self.session_key()
        direct = urlsplit(url).hostname in LOOPBACK_HOSTS
        return {
            "additional_headers": self.auth_headers(key),
            "open_timeout": self.timeout_s,
            "logger": WIRE_LOG,
            "proxy": None if direct else True,  # True: the environment's proxy, if any
        }

    def connect_failed(self, url: str, exc: Exception) -> TransportError:
        """A timeout names the limit; anything else the endpoint and the failure, never the key."""
        if isinstance(exc, TimeoutError):
            return self.fail(f"handshake timed out after {self.timeout_s:g} s")
        return self.fail(f"cannot connect to {url} ({type(exc).__name__}: {exc})")

    async def preload(self, preload: Preload) -> None:
        """Send the session settings, wait for their acknowledgement, then the history."""
        self.endpointing = preload.endpointing
        for message in self.session_messages(preload):
            await self.send_json(message)
        await self._until_ack()
        for message in self.history_messages(preload):
            await self.send_json(message)

    async def _until_ack(self) -> None:
        """Read (and keep for :meth:`events`) what comes until the settings are acknowledged."""
        try:
            async with asyncio.timeout(self.timeout_s):
                while True:
                    item = await self._inbox.get()
                    if item is None:
                        raise self.fail("the server closed the session during the handshake")
                    if isinstance(item, TransportError):
                        raise item
                    if isinstance(item, SystemEvent):
                        self._backlog.append(item)
                        continue
                    message = self.parse(item[1])
                    self._backlog.extend(self._handle(item[0], message))
                    if self.is_ack(message):
                        return
        except TimeoutError:
            raise self.fail(
                f"handshake timed out: the session settings were not acknowledged within "
                f"{self.timeout_s:g} s"
            ) from None

    async def send_json(self, message: dict[str, Any]) -> None:
        """Send one client message."""
        await self.send(json.dumps(message, separators=(",", ":")))

    async def send_frame(self, samples: FloatArray) -> None:
        """Send one live frame, resampled to the wire's rate."""
        chunk = self._resampler.push(samples)
        if len(chunk):
            await self.send_json(self.audio_message(encode(chunk)))

    # -- what arrives -----------------------------------------------------------------------

    def parse(self, raw: str | bytes) -> dict[str, Any]:
        """One message as a JSON object; anything else is a transport error saying what."""
        try:
            message = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise self.fail(f"malformed JSON from the server ({exc})") from None
        if not isinstance(message, dict):
            raise self.fail(f"server message is not a JSON object: {type(message).__name__}")
        return message

    def decode(self, arrival_ns: int, message: str | bytes) -> list[SystemEvent]:
        """One server message as events."""
        return self._handle(arrival_ns, self.parse(message))

    def _handle(self, arrival_ns: int, message: dict[str, Any]) -> list[SystemEvent]:
        """Translate a message and keep the playback queue's end up to date."""
        events = self.translate(arrival_ns, message)
        for event in events:
            if event.kind is EventKind.AUDIO and len(event.samples):
                start = max(event.arrival_ns, self._playing_until_ns)
                self._playing_until_ns = start + len(event.samples) * NS_PER_S // self.OUTPUT_RATE
        return events

    def unplayed_ms(self, at_ns: int) -> float:
        """Audio received but not yet played by ``at_ns``, in milliseconds."""
        return max(0, self._playing_until_ns - at_ns) / 1e6

    def interrupt(self, at_ns: int, reason: str) -> SystemEvent | None:
        """Stop playback at ``at_ns`` as a client would, if anything is still playing.

        The harness's playback then drops what had not been played (docs/architecture.md "Clocks");
        the event says why and how much.
        """
        unplayed = self.unplayed_ms(at_ns)
        if unplayed <= 0:
            return None
        self._playing_until_ns = at_ns
        return SystemEvent(
            EventKind.INTERRUPTED,
            at_ns,
            detail={"reason": reason, "unplayed_ms": round(unplayed, 3)},
        )


def without_audio(message: dict[str, Any]) -> dict[str, Any]:
    """A server message for the trace: its base64 audio replaced by its length."""
    kept = dict(message)
    for key in ("delta", "audio"):
        value = kept.get(key)
        if isinstance(value, str) and len(value) > 64:
            kept[key] = f"<{len(value)} base64 chars>"
    return kept
