"""What every websocket adapter shares: the socket, receipt stamps, the event queue, close.

A reader task takes each message off the socket and stamps it with the rollout's clock the
moment the socket hands it over, then queues it undecoded; :meth:`WebsocketAdapter.events`
decodes later, so a slow consumer never delays a stamp (docs/architecture.md "Clocks"). A dialect
says only what it sends and what a received message means (:meth:`WebsocketAdapter.decode`).
"""

from __future__ import annotations

import asyncio
import contextlib
from abc import abstractmethod
from collections import deque
from collections.abc import AsyncIterator, Coroutine
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import (
    ConnectionClosed,
    ConnectionClosedOK,
    InvalidHandshake,
    InvalidStatus,
    InvalidURI,
)

from pmc.clock import Clock
from pmc.systems._adapter import (
    EventKind,
    RetryReason,
    SystemAdapter,
    SystemEvent,
    TransportError,
)
from pmc.systems._card import SystemCard

OPEN_TIMEOUT_S = 10.0
"""How long the opening handshake may take (websockets' own default), unless a dialect says."""
MAX_MESSAGE_BYTES = 16 * 2**20
"""Largest message accepted (websockets' 1 MiB default is tight for long audio parts)."""

PASSING_STATUS = {429: RetryReason.RATE_LIMITED, 503: RetryReason.OVERLOADED}
"""Handshake refusals that say "try again later" (HTTP 429 Too Many Requests, 503 Unavailable)."""
PASSING_CLOSE = {
    1001: RetryReason.GOING_AWAY,  # going away: the server is shutting the session down
    1012: RetryReason.GOING_AWAY,  # service restart
    1013: RetryReason.OVERLOADED,  # try again later
}
"""Close codes (RFC 6455 and IANA's registry) after which a new session may well succeed."""

Received = tuple[int, str | bytes]
"""A message and its receipt stamp."""
_Item = Received | SystemEvent | TransportError | None
"""What the queue holds: a message, the adapter's own record, a failure, or the end (None)."""


class WebsocketAdapter(SystemAdapter):
    """A system reached over one websocket; subclasses give the dialect.

    The dialect implements :meth:`decode` (one received message as events), what it sends
    (:meth:`send` carries it) and the rest of :class:`SystemAdapter`. It may widen the socket's
    options (:meth:`socket_options`) and the text of a failed open (:meth:`connect_failed`).
    :meth:`connect` opens the card's endpoint and starts the reader; a dialect that opens later
    (when the preload brings what the URL needs) calls :meth:`open` and :meth:`start_reader`
    itself. Events put in ``_backlog`` are yielded before anything still queued.
    """

    def __init__(self, card: SystemCard, clock: Clock) -> None:
        super().__init__(card, clock)
        self._ws: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._inbox: asyncio.Queue[_Item] = asyncio.Queue()
        self._backlog: deque[SystemEvent] = deque()
        self._tasks: set[asyncio.Task[None]] = set()

    # -- the dialect ------------------------------------------------------------------------

    @abstractmethod
    def decode(self, arrival_ns: int, message: str | bytes) -> list[SystemEvent]:
        """What one received message means; raises TransportError for one it cannot read."""

    def socket_options(self, url: str) -> dict[str, Any]:
        """Options for websockets' ``connect`` that add to or replace :meth:`open`'s defaults."""
        return {}

    def connect_failed(self, url: str, exc: Exception) -> TransportError:
        """The error for a socket at ``url`` that would not open."""
        return self.fail(f"cannot connect to {url} ({exc})")

    # -- the socket -------------------------------------------------------------------------

    def fail(
        self, what: str, retry: RetryReason | None = None, retry_after_s: float | None = None
    ) -> TransportError:
        """A transport error that names the card (``retry``: the server says it will pass)."""
        message = f"system card {self.card.name}: {what}"
        return TransportError(message, retry=retry, retry_after_s=retry_after_s)

    def endpoint(self) -> str:
        """The card's endpoint; a card without one is a transport error."""
        if not self.card.endpoint:
            raise self.fail("no endpoint to connect to")
        return self.card.endpoint

    async def connect(self) -> None:
        """Open the websocket at the card's endpoint and start stamping what arrives."""
        await self.open(self.endpoint())
        self.start_reader()

    async def open(self, url: str) -> ClientConnection:
        """Open the websocket at ``url``; any failure to open is a transport error."""
        options: dict[str, Any] = {
            "compression": None,  # deflating audio costs CPU and saves little or nothing
            "proxy": None,  # reached directly, whatever the environment, unless a dialect says
            "open_timeout": OPEN_TIMEOUT_S,
            "max_size": MAX_MESSAGE_BYTES,
        }
        options |= self.socket_options(url)
        try:
            self._ws = await connect(url, **options)
        except (OSError, TimeoutError, InvalidURI, InvalidHandshake) as exc:
            error = self.connect_failed(url, exc)
            if isinstance(exc, InvalidStatus) and error.retry is None:
                error.retry = PASSING_STATUS.get(exc.response.status_code)
                error.retry_after_s = retry_after(exc.response.headers.get("Retry-After"))
            # from None: a dialect's credentials travel in the request, never in a cause chain.
            raise error from None
        return self._ws

    def start_reader(self) -> None:
        """Start the task that stamps and queues every message from the open socket."""
        if self._ws is None:
            raise self.fail("not connected")
        self._reader = asyncio.get_running_loop().create_task(self._read(self._ws))

    async def _read(self, ws: ClientConnection) -> None:
        """Stamp each message the moment the socket hands it over, then queue it undecoded.

        A lost connection that the dialect resumes (:meth:`reconnect`) goes on on the new one.
        """
        while True:
            try:
                while True:
                    message = await ws.recv()
                    self._inbox.put_nowait((self.clock.now_ns(), message))
            except ConnectionClosedOK:
                self._inbox.put_nowait(None)
                return
            except ConnectionClosed as exc:
                resumed = await self.reconnect(exc)
                if resumed is None:
                    self._inbox.put_nowait(self.fail(f"connection lost ({exc})", _passing(exc)))
                    return
                ws = resumed

    async def reconnect(self, lost: ConnectionClosed) -> ClientConnection | None:
        """A new socket that resumes the session after ``lost``; None (the default): it ends."""
        return None

    async def send(self, message: str | bytes, lost: str = "connection lost while sending") -> None:
        """Send one message; a closed connection is a transport error that starts with ``lost``."""
        if self._ws is None:
            raise self.fail("not connected")
        try:
            await self._ws.send(message)
        except ConnectionClosed as exc:
            # The close's own reason: a send can meet a server's "going away" close before the
            # reader has handed over the message that announced it.
            raise self.fail(f"{lost} ({exc})", _passing(exc)) from None

    def emit(self, kind: EventKind, **fields: Any) -> None:
        """Record something the adapter itself did (a request it sent, a wait), stamped now."""
        self._inbox.put_nowait(SystemEvent(kind, self.clock.now_ns(), **fields))

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` beside the stream; its transport failure ends the session."""
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)

        def done(finished: asyncio.Task[None]) -> None:
            self._tasks.discard(finished)
            if not finished.cancelled() and isinstance(finished.exception(), TransportError):
                self._inbox.put_nowait(finished.exception())  # type: ignore[arg-type]

        task.add_done_callback(done)

    async def events(self) -> AsyncIterator[SystemEvent]:
        """Decoded messages and the adapter's own records, in arrival order, until closed.

        Raises:
            TransportError: The connection was lost, or a message could not be read.
        """
        while True:
            while self._backlog:
                yield self._backlog.popleft()
            item = await self._inbox.get()
            if item is None:
                return
            if isinstance(item, TransportError):
                raise item
            if isinstance(item, SystemEvent):
                yield item
                continue
            for event in self.decode(*item):
                yield event

    async def close(self) -> None:
        """Stop pending work, close the websocket (closing handshake) and the reader."""
        for task in list(self._tasks):
            task.cancel()
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            if not self._reader.done():
                self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        self._inbox.put_nowait(None)


def retry_after(value: str | None) -> float | None:
    """A ``Retry-After`` header in seconds (the HTTP-date form is not used by these APIs: None)."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def _passing(closed: ConnectionClosed) -> RetryReason | None:
    """The retry reason of the close the server sent (:data:`PASSING_CLOSE`), if it sent one."""
    return PASSING_CLOSE.get(closed.rcvd.code) if closed.rcvd is not None else None
