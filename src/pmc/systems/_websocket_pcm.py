"""A system that takes PCM16 frames over a websocket and answers in PCM16 audio.

The wire format of :mod:`pmc.testing.loopback` (the fake system the harness bench measures
itself against): binary messages are PCM16 mono little-endian at the card's rate, both ways;
text messages are JSON signals. The socket, the receipt stamps and the queue are
:class:`~pmc.systems._websocket.WebsocketAdapter`'s.
"""

from __future__ import annotations

import json

import numpy as np

from pmc.audio import FloatArray, to_pcm16
from pmc.clock import Clock
from pmc.systems._adapter import EventKind, Preload, SystemEvent, register_adapter
from pmc.systems._card import SystemCard
from pmc.systems._websocket import WebsocketAdapter


@register_adapter("loopback-pcm")
class WebsocketPcmAdapter(WebsocketAdapter):
    """PCM16 frames out, PCM16 audio and JSON signals back, over one websocket."""

    VERSION = "1"
    SENDS_TEXT = False  # PCM and JSON signals only: a reply is the system's speech alone

    def __init__(self, card: SystemCard, clock: Clock) -> None:
        super().__init__(card, clock)
        self._carry = b""  # the first byte of a sample that the next message completes

    async def preload(self, preload: Preload) -> None:
        """Nothing to preload: the protocol has no history."""

    async def send_frame(self, samples: FloatArray) -> None:
        """Send one frame as PCM16 bytes."""
        await self.send(to_pcm16(samples).astype("<i2", copy=False).tobytes())

    async def end_of_input(self) -> None:
        """Nothing to signal: the system endpoints the audio itself."""

    def decode(self, arrival_ns: int, message: str | bytes) -> list[SystemEvent]:
        """One message as an event; a sample split across messages waits for its second byte."""
        if isinstance(message, str):
            try:
                detail = json.loads(message)
            except json.JSONDecodeError as exc:
                raise self.fail(f"malformed text message ({exc})") from None
            if not isinstance(detail, dict):
                raise self.fail("text message is not an object")
            return [SystemEvent(EventKind.SIGNAL, arrival_ns, detail=detail)]
        data = self._carry + message
        whole = len(data) - len(data) % 2
        self._carry = data[whole:]
        if not whole:
            return []
        pcm = np.frombuffer(data, dtype="<i2", count=whole // 2)
        return [SystemEvent(EventKind.AUDIO, arrival_ns, pcm.astype(np.float32) / 32768.0)]
