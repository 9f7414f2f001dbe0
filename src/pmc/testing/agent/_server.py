"""Serving the fake agent on 127.0.0.1 from a thread of its own, over one wire."""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from websockets.asyncio.server import ServerConnection, serve
from websockets.http11 import Request, Response

from pmc.testing.agent._agent import AgentBehaviour, AgentCall, CallRecord
from pmc.testing.agent._wires import WIRES
from pmc.testing.hosted import answer_audio
from pmc.testing.pipecat_bot import PATHS, Wire

HOST = "127.0.0.1"
START_TIMEOUT_S = 30.0
WIRE_LOG = logging.getLogger("pmc.testing.agent.wire")
WIRE_LOG.setLevel(logging.INFO)


@dataclass
class FakeAgent:
    """A running fake agent: its URL, its wire and every call's record.

    ``behaviour`` may be replaced while it runs: each new call takes the one then in force.
    """

    url: str
    wire: Wire
    behaviour: AgentBehaviour = field(default_factory=AgentBehaviour)
    calls: list[CallRecord] = field(default_factory=list)
    refused: int = 0
    stalled: int = 0
    open_calls: int = 0
    peak_calls: int = 0
    """The most calls open at once (a card's concurrency limit must bound it)."""


class FakeAgentThread:
    """The fake agent served from an event loop in its own thread (the harness blocks)."""

    def __init__(self, behaviour: AgentBehaviour | None = None, wire: Wire = Wire.TWILIO) -> None:
        self.agent = FakeAgent("", wire, behaviour or AgentBehaviour())
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(
            target=self._main, name=f"pmc-fake-agent-{wire}", daemon=True
        )
        self._numbers = itertools.count(1)
        self._attempts = itertools.count(1)

    def _faulty(self, number: int) -> bool:
        limit = self.agent.behaviour.fault_sessions
        return limit is None or number <= limit

    async def _check(self, connection: ServerConnection, request: Request) -> Response | None:
        behaviour = self.agent.behaviour
        faulty = self._faulty(next(self._attempts))
        if behaviour.refuse and faulty:
            self.agent.refused += 1
            return connection.respond(403, "injected fault: call refused\n")
        if behaviour.stall_s and faulty:
            self.agent.stalled += 1
            await asyncio.sleep(behaviour.stall_s)  # the caller gives up first
        return None

    async def _handler(self, ws: ServerConnection) -> None:
        number = next(self._numbers)
        record = CallRecord(number)
        self.agent.calls.append(record)
        behaviour = self.agent.behaviour
        if not self._faulty(number):
            behaviour = behaviour.without_faults()
        self.agent.open_calls += 1
        self.agent.peak_calls = max(self.agent.peak_calls, self.agent.open_calls)
        try:
            await AgentCall(ws, behaviour, record, WIRES[self.agent.wire]).run()
        finally:
            self.agent.open_calls -= 1

    def _main(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with serve(
            self._handler,
            HOST,
            0,
            process_request=self._check,
            compression=None,
            ping_interval=None,
            logger=WIRE_LOG,
        ) as server:
            port = server.sockets[0].getsockname()[1] if server.sockets else 0
            self.agent.url = f"ws://{HOST}:{port}{PATHS[self.agent.wire]}"
            self._ready.set()
            await self._stop.wait()

    def __enter__(self) -> FakeAgent:
        answer_audio(self.agent.behaviour.reply_text)  # voiced before any call starts
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT_S):
            raise RuntimeError(f"the fake agent ({self.agent.wire}) did not start")
        return self.agent

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(START_TIMEOUT_S)


@contextmanager
def fake_agent(
    behaviour: AgentBehaviour | None = None, wire: Wire = Wire.TWILIO
) -> Iterator[FakeAgent]:
    """Serve the fake agent over ``wire`` from its own thread for a ``with`` block."""
    with FakeAgentThread(behaviour, wire) as agent:
        yield agent
