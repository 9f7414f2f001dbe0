"""Serving the fake hosted sessions: on 127.0.0.1 in the caller's event loop, or in a thread.

A fake serves one websocket per session (a :class:`FakeSession` of its dialect) in the caller's
event loop, or, through :class:`FakeServerThread`, in a thread of its own, for a harness that
runs its own loop. It checks each handshake's key and injects the handshake faults and
refusals (HTTP 429 with ``Retry-After``, before any session exists).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from pmc.testing.hosted._behaviour import FakeBehaviour, SessionRecord
from pmc.testing.hosted._session import FakeSession
from pmc.testing.hosted._voice import answer_audio

HOST = "127.0.0.1"
START_TIMEOUT_S = 30.0
WIRE_LOG = logging.getLogger("pmc.testing.hosted.wire")
"""The fakes' websocket logger, held at INFO: at DEBUG the library logs request headers, and a
client's key with them."""
WIRE_LOG.setLevel(logging.INFO)


@dataclass
class FakeServer:
    """A running fake: its URL (host, port, the dialect's path) and every session's record.

    ``behaviour`` may be replaced while it runs: each new session takes the one then in force
    (a test makes a fault, then resumes the run against the same URL without it). ``refused``
    counts the handshakes refused with 429 (:attr:`FakeBehaviour.refuse_every`), which have no
    session.
    """

    url: str
    behaviour: FakeBehaviour = field(default_factory=FakeBehaviour)
    sessions: list[SessionRecord] = field(default_factory=list)
    refused: int = 0

    def session(self, session_id: str) -> SessionRecord:
        """A session's record by the id the client was given."""
        for record in self.sessions:
            if record.session_id == session_id:
                return record
        raise KeyError(session_id)


@asynccontextmanager
async def serve_fake(
    factory: type[FakeSession],
    behaviour: FakeBehaviour | None = None,
    auth_header: str = "Authorization",
    keep_messages: bool = False,
    port: int = 0,
) -> AsyncIterator[FakeServer]:
    """Serve a fake of one dialect on 127.0.0.1 in the running loop.

    Args:
        factory: The dialect's session class.
        behaviour: How it behaves (defaults: :class:`FakeBehaviour`).
        auth_header: The header a client must authenticate with (any non-empty key passes; a
            key in the URL is refused, as a key must never be in one); empty: a server that
            takes no key, where a client that sends that header anyway is refused.
        keep_messages: Keep every client message's text in the records (conformance tests).
        port: The port to listen on (0: any free one).
    """
    ids = itertools.count(1)
    handshakes = itertools.count()
    attempts = itertools.count(1)
    server_state = FakeServer("", behaviour or FakeBehaviour())

    async def check(connection: ServerConnection, request: Request) -> Response | None:
        behaviour = server_state.behaviour
        limit = behaviour.fault_sessions
        attempt = next(attempts)
        delay = behaviour.handshake_delay_s if limit is None or next(handshakes) < limit else 0
        if delay:
            await asyncio.sleep(delay)
        headers: Headers = request.headers
        if not auth_header:
            if "Authorization" in headers:
                return connection.respond(400, "this server takes no key\n")
        elif not headers.get(auth_header, "").strip():
            return connection.respond(401, f"missing {auth_header}\n")
        if "key=" in request.path or "api_key" in request.path:
            return connection.respond(400, "an API key in the URL is refused\n")
        every = behaviour.refuse_every
        if every is not None and (attempt - 1) % every == 0:
            server_state.refused += 1
            return _too_many(connection, behaviour.retry_after)
        return None

    async def handler(ws: ServerConnection) -> None:
        number = next(ids)
        record = SessionRecord(f"sess_{number:04d}", factory.DIALECT)
        record.path = ws.request.path if ws.request is not None else ""
        record.messages = [] if keep_messages else None
        server_state.sessions.append(record)
        behaviour = server_state.behaviour
        if behaviour.fault_sessions is not None and number > behaviour.fault_sessions:
            behaviour = behaviour.without_faults()
        await factory(ws, behaviour, record).run()

    async with serve(
        handler,
        HOST,
        port,
        process_request=check,
        compression=None,
        ping_interval=None,
        logger=WIRE_LOG,
    ) as server:
        server_state.url = _url(server, factory.PATH)
        yield server_state


def _too_many(connection: ServerConnection, retry_after: str) -> Response:
    """HTTP 429 with a ``Retry-After`` header (:attr:`FakeBehaviour.retry_after`)."""
    response = connection.respond(429, "injected push-back: rate limit exceeded\n")
    response.headers["Retry-After"] = retry_after
    return response


def _url(server: Server, path: str) -> str:
    port = server.sockets[0].getsockname()[1] if server.sockets else 0
    return f"ws://{HOST}:{port}{path}"


class FakeServerThread:
    """A fake served from an event loop in a thread of its own (for a harness that blocks)."""

    def __init__(
        self,
        factory: type[FakeSession],
        behaviour: FakeBehaviour | None = None,
        auth_header: str = "Authorization",
        keep_messages: bool = False,
        port: int = 0,
    ) -> None:
        self._args = (factory, behaviour or FakeBehaviour(), auth_header, keep_messages, port)
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=self._main, name="pmc-fake-hosted", daemon=True)
        self.server = FakeServer("")

    def _main(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with serve_fake(*self._args) as server:
            self.server = server
            self._ready.set()
            await self._stop.wait()

    def __enter__(self) -> FakeServer:
        answer_audio(self._args[1].reply_text)  # voice the answer before any stream starts
        answer_audio(FakeBehaviour().reply_text)
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT_S):
            raise RuntimeError("the fake hosted server did not start")
        return self.server

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(START_TIMEOUT_S)


@contextmanager
def fake_in_thread(
    factory: type[FakeSession], behaviour: FakeBehaviour | None = None, **options: Any
) -> Iterator[FakeServer]:
    """Serve a fake from its own thread for the duration of a ``with`` block."""
    with FakeServerThread(factory, behaviour, **options) as server:
        yield server
