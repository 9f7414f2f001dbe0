"""A voice agent written for voicebench's generic websocket (docs/wire-formats.md section 9).

The raw-PCM wire of ``loopback-pcm`` (binary PCM16 mono little-endian both ways; voicebench
uses 16 kHz and 20 ms frames) with voicebench's text messages: pmc may open with
``{"type": "start", "sample_rate": ...}``; the agent may send ``{"type": "clear"}`` (drop the
audio not yet played: it was interrupted) and ``{"type": "transcript", "role": "user" |
"agent", "text": ..., "final": true}``. An agent written for voicebench runs under pmc unchanged.

Playback is pmc's: a ``clear`` cuts what has not played where it arrives, as voicebench's own
player does, and is recorded as an interruption; the agent's final transcripts are kept as its
words (scoring still hears the audio), the user's as signals.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pmc.audio import FloatArray, resample, to_pcm16
from pmc.clock import NS_PER_S, Clock
from pmc.systems._adapter import (
    EventKind,
    SystemEvent,
    playback_cut,
    register_adapter,
    unknown_signal,
)
from pmc.systems._card import SystemCard
from pmc.systems._websocket_pcm import WebsocketPcmAdapter

WIRE_RATE = 16_000
"""voicebench's rate, both ways, unless the card's ``params.wire_rate`` says otherwise."""


@dataclass(frozen=True)
class VoicebenchParams:
    """A voicebench card's ``[params]``."""

    send_start: bool = True
    """Open with ``{"type": "start", "sample_rate": ...}``, as voicebench's harness does."""
    wire_rate: int = WIRE_RATE
    """The rate of the audio on the wire, both ways."""


@register_adapter("voicebench-ws")
class VoicebenchAdapter(WebsocketPcmAdapter):
    """voicebench's websocket: PCM16 both ways, ``start``, ``clear`` and ``transcript``.

    Live frames are resampled one by one from the card's rate to the wire's (no hold-back, as
    :class:`~pmc.systems._pipecat_ws.PipecatWebsocket` does); the agent's audio per message to
    the card's rate.
    """

    VERSION = "1"
    PARAMS = VoicebenchParams
    params: VoicebenchParams

    def __init__(self, card: SystemCard, clock: Clock) -> None:
        super().__init__(card, clock)
        self._playing_until_ns = 0
        """Where playback of the audio received so far ends, on the harness clock."""

    async def connect(self) -> None:
        """Open the socket and say the rate, as voicebench's harness does."""
        await super().connect()
        if self.params.send_start:
            start = {"type": "start", "sample_rate": self.params.wire_rate}
            await self.send(json.dumps(start, separators=(",", ":")))

    async def send_frame(self, samples: FloatArray) -> None:
        """One live frame as PCM16 bytes at the wire's rate."""
        wire = resample(samples, self.card.sample_rate, self.params.wire_rate)
        await self.send(to_pcm16(wire).astype("<i2", copy=False).tobytes())

    def decode(self, arrival_ns: int, message: str | bytes) -> list[SystemEvent]:
        """Audio as the raw wire's; ``clear`` and ``transcript`` as what they mean."""
        if isinstance(message, bytes):
            events = []
            for event in super().decode(arrival_ns, message):
                samples = resample(event.samples, self.params.wire_rate, self.card.sample_rate)
                start = max(event.arrival_ns, self._playing_until_ns)
                self._playing_until_ns = start + len(samples) * NS_PER_S // self.card.sample_rate
                events.append(SystemEvent(EventKind.AUDIO, event.arrival_ns, samples))
            return events
        (signal,) = super().decode(arrival_ns, message)
        detail: dict[str, Any] = signal.detail
        kind = detail.get("type")
        if kind == "clear":
            return self._clear(arrival_ns, detail)
        if kind == "transcript":
            return self._transcript(arrival_ns, detail)
        return [unknown_signal(arrival_ns, detail, event=str(kind))]

    def _clear(self, arrival_ns: int, detail: dict[str, Any]) -> list[SystemEvent]:
        """Drop what has not played; an interruption when anything had not."""
        events = [SystemEvent(EventKind.SIGNAL, arrival_ns, detail=detail)]
        stop = playback_cut(arrival_ns, self._playing_until_ns, "clear")
        if stop is not None:
            self._playing_until_ns = arrival_ns
            events.append(stop)
        return events

    def _transcript(self, arrival_ns: int, detail: dict[str, Any]) -> list[SystemEvent]:
        """An agent's final transcript is its words; anything else a signal for the trace."""
        text = detail.get("text")
        if not isinstance(text, str):
            raise self.fail("transcript message without text")
        events = [SystemEvent(EventKind.SIGNAL, arrival_ns, detail=detail)]
        if detail.get("role") == "agent" and detail.get("final", True) and text.strip():
            events.append(SystemEvent(EventKind.TEXT, arrival_ns, text=text, detail=detail))
        return events
