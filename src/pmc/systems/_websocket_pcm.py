"""A system that takes PCM16 frames over a websocket and answers in PCM16 audio.

The wire format of :mod:`pmc.testing.loopback` (the fake system the harness bench measures
itself against): binary messages are PCM16 mono little-endian at the card's rate, both ways;
text messages are JSON signals. A reader task takes each message off the socket and stamps it
with the rollout's clock at once; decoding happens later, when :meth:`events` is read, so a slow
consumer never delays a stamp.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

import numpy as np
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, ConnectionClosedOK, InvalidHandshake, InvalidURI

from pmc.audio import FloatArray, to_pcm16
from pmc.clock import Clock
from pmc.systems._adapter import (
    EventKind,
    Preload,
    SystemAdapter,
    SystemEvent,
    TransportError,
    register_adapter,
)
from pmc.systems._card import SystemCard

OPEN_TIMEOUT_S = 10.0
"""How long the opening handshake may take (websockets' own default)."""

_Received = tuple[int, str | bytes]
"""A message and its receipt stamp."""


@register_adapter("loopback-pcm")
class WebsocketPcmAdapter(SystemAdapter):
    """PCM16 frames out, PCM16 audio and JSON signals back, over one websocket."""

    VERSION = "1"

    def __init__(self, card: SystemCard, clock: Clock) -> None:
        super().__init__(card, clock)
        self._ws: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._inbox: asyncio.Queue[_Received | TransportError | None] = asyncio.Queue()
        self._carry = b""  # the first byte of a sample that the next message completes

    async def connect(self) -> None:
        """Open the websocket at ``card.endpoint`` and start stamping what arrives."""
        endpoint = self.card.endpoint
        if not endpoint:
            raise TransportError(f"system card {self.card.name}: no endpoint to connect to")
        try:
            self._ws = await connect(
                endpoint,
                compression=None,  # deflating PCM costs CPU and saves nothing
                proxy=None,  # a loopback system is reached directly, whatever the environment
                open_timeout=OPEN_TIMEOUT_S,
            )
        except (OSError, TimeoutError, InvalidURI, InvalidHandshake) as exc:
            raise TransportError(
                f"system card {self.card.name}: cannot connect to {endpoint} ({exc})"
            ) from exc
        self._reader = asyncio.get_running_loop().create_task(self._read(self._ws))

    async def _read(self, ws: ClientConnection) -> None:
        """Stamp each message the moment the socket hands it over, then queue it undecoded."""
        try:
            while True:
                message = await ws.recv()
                self._inbox.put_nowait((self.clock.now_ns(), message))
        except ConnectionClosedOK:
            self._inbox.put_nowait(None)
        except ConnectionClosed as exc:
            self._inbox.put_nowait(
                TransportError(f"system card {self.card.name}: connection lost ({exc})")
            )

    async def preload(self, preload: Preload) -> None:
        """Nothing to preload: the protocol has no history."""

    async def send_frame(self, samples: FloatArray) -> None:
        """Send one frame as PCM16 bytes."""
        if self._ws is None:
            raise TransportError(f"system card {self.card.name}: not connected")
        try:
            await self._ws.send(to_pcm16(samples).astype("<i2", copy=False).tobytes())
        except ConnectionClosed as exc:
            raise TransportError(
                f"system card {self.card.name}: connection lost while sending ({exc})"
            ) from exc

    async def end_of_input(self) -> None:
        """Nothing to signal: the system endpoints the audio itself."""

    async def events(self) -> AsyncIterator[SystemEvent]:
        """Decoded messages in arrival order, until the connection closes.

        Raises:
            TransportError: The connection was lost, or a message was malformed.
        """
        while True:
            item = await self._inbox.get()
            if item is None:
                return
            if isinstance(item, TransportError):
                raise item
            event = self._decode(*item)
            if event is not None:
                yield event

    def _decode(self, arrival_ns: int, message: str | bytes) -> SystemEvent | None:
        """One message as an event; a sample split across messages waits for its second byte."""
        if isinstance(message, str):
            try:
                detail = json.loads(message)
            except json.JSONDecodeError as exc:
                raise TransportError(
                    f"system card {self.card.name}: malformed text message ({exc})"
                ) from None
            if not isinstance(detail, dict):
                raise TransportError(f"system card {self.card.name}: text message is not an object")
            return SystemEvent(EventKind.SIGNAL, arrival_ns, detail=detail)
        data = self._carry + message
        whole = len(data) - len(data) % 2
        self._carry = data[whole:]
        if not whole:
            return None
        pcm = np.frombuffer(data, dtype="<i2", count=whole // 2)
        return SystemEvent(EventKind.AUDIO, arrival_ns, pcm.astype(np.float32) / 32768.0)

    async def close(self) -> None:
        """Close the websocket (closing handshake) and stop the reader."""
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            if not self._reader.done():
                self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        self._inbox.put_nowait(None)
