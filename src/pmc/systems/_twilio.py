"""A telephony voice agent over Twilio Media Streams: pmc plays Twilio and the caller.

Most phone agents (Pipecat, LiveKit telephony, vendors' bots) accept Twilio's bidirectional
Media Streams websocket (docs/wire-formats.md section 7): JSON text messages, the caller's audio
as 20 ms ``media`` chunks of 8 kHz mu-law, the agent's audio back as ``media`` of any length,
``mark`` (echoed once the audio before it has played) and ``clear`` (drop what has not played:
the agent stopped itself, e.g. on barge-in). The agent hears the live call only: no history, no
identity prompt, and it finds the end of the caller's turn itself (the card's family is
``duplex``, so the harness streams silence after the live audio, as a phone line would).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
from collections import deque
from typing import Any

import numpy as np

from pmc.audio import FloatArray, mulaw_decode, mulaw_encode, resample, to_pcm16
from pmc.clock import NS_PER_S, Clock
from pmc.errors import PmcError
from pmc.systems._adapter import (
    EventKind,
    Preload,
    SystemEvent,
    playback_cut,
    register_adapter,
    unknown_signal,
)
from pmc.systems._card import SystemCard
from pmc.systems._websocket import WebsocketAdapter

WIRE_RATE = 8_000
"""Twilio's audio rate, both ways (``audio/x-mulaw``, 8000 Hz, mono)."""
CHUNK_BYTES = 160
"""One inbound ``media`` chunk: 20 ms of 8 kHz mu-law, as Twilio sends them."""
STREAM_SID = "MZ00000000000000000000000000000000"
ACCOUNT_SID = "AC00000000000000000000000000000000"
CALL_SID = "CA00000000000000000000000000000000"
"""Placeholder ids of Twilio's shape (two letters, 32 hex digits): no real account is involved."""
KNOWN_EVENTS = frozenset({"media", "mark", "clear"})


@register_adapter("twilio-media-streams")
class TwilioMediaStreams(WebsocketAdapter):
    """The caller's side of a Twilio Media Stream: mu-law ``media`` out, the agent's back.

    Input frames are resampled one by one from the card's rate to 8 kHz (soxr, as
    :func:`pmc.audio.resample`): a streaming resampler would hold 16 ms back and release 60 ms
    bursts, where Twilio sends a 20 ms packet every 20 ms; per frame the edges cost a little
    (about 32 dB SNR on speech, near mu-law's own). The agent's audio is upsampled per message.
    """

    VERSION = "1"
    SENDS_TEXT = False  # a phone line carries audio only

    def __init__(self, card: SystemCard, clock: Clock) -> None:
        super().__init__(card, clock)
        self._pending = b""  # mu-law not yet sent as a whole 160-byte chunk
        self._sequence = 0
        self._chunk = 0
        self._playing_until_ns = 0
        """Where the agent's queued audio ends on the harness clock (as the trace plays it)."""
        self._marks: deque[tuple[int, str]] = deque()
        """Marks not yet echoed: when the audio before each ends playing, and its name."""

    # -- what pmc sends ---------------------------------------------------------------------

    def _next_sequence(self) -> str:
        self._sequence += 1
        return str(self._sequence)

    async def send_json(self, message: dict[str, Any]) -> None:
        """Send one message as Twilio does (compact JSON text)."""
        await self.send(json.dumps(message, separators=(",", ":")))

    async def preload(self, preload: Preload) -> None:
        """Open the call: ``connected``, then ``start`` (no history: the agent hears the call)."""
        await self.send_json({"event": "connected", "protocol": "Call", "version": "1.0.0"})
        start = {
            "streamSid": STREAM_SID,
            "accountSid": ACCOUNT_SID,
            "callSid": CALL_SID,
            "tracks": ["inbound"],
            "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": WIRE_RATE, "channels": 1},
            "customParameters": {},
        }
        await self.send_json(
            {
                "event": "start",
                "sequenceNumber": self._next_sequence(),
                "start": start,
                "streamSid": STREAM_SID,
            }
        )

    async def send_frame(self, samples: FloatArray) -> None:
        """One live frame as 20 ms ``media`` chunks of 8 kHz mu-law; echo marks that played."""
        await self._echo_played(self.clock.now_ns())
        wire = resample(samples, self.card.sample_rate, WIRE_RATE)
        self._pending += mulaw_encode(to_pcm16(wire)).tobytes()
        while len(self._pending) >= CHUNK_BYTES:
            payload, self._pending = self._pending[:CHUNK_BYTES], self._pending[CHUNK_BYTES:]
            await self.send_json(self._media(payload))

    def _media(self, payload: bytes) -> dict[str, Any]:
        timestamp = self._chunk * CHUNK_BYTES * 1000 // WIRE_RATE
        self._chunk += 1
        return {
            "event": "media",
            "sequenceNumber": self._next_sequence(),
            "media": {
                "track": "inbound",
                "chunk": str(self._chunk),
                "timestamp": str(timestamp),
                "payload": base64.b64encode(payload).decode("ascii"),
            },
            "streamSid": STREAM_SID,
        }

    async def end_of_input(self) -> None:
        """Nothing to signal: the agent finds the end of the turn itself.

        Never called for this card: the ``duplex`` family gets silence frames instead.
        """

    async def _echo_played(self, now_ns: int) -> None:
        """Echo each mark whose audio has played by ``now_ns``, as Twilio does."""
        while self._marks and self._marks[0][0] <= now_ns:
            await self._echo(self._marks.popleft()[1])

    async def _echo(self, name: str) -> None:
        await self.send_json(
            {
                "event": "mark",
                "sequenceNumber": self._next_sequence(),
                "streamSid": STREAM_SID,
                "mark": {"name": name},
            }
        )

    async def close(self) -> None:
        """Say ``stop`` (the caller hung up), then close the socket."""
        if self._ws is not None:
            stop = {"accountSid": ACCOUNT_SID, "callSid": CALL_SID}
            message = {
                "event": "stop",
                "sequenceNumber": self._next_sequence(),
                "stop": stop,
                "streamSid": STREAM_SID,
            }
            with contextlib.suppress(PmcError):  # the agent already hung up: nothing to tell
                await self.send_json(message)
        await super().close()

    # -- what the agent sends ---------------------------------------------------------------

    def decode(self, arrival_ns: int, message: str | bytes) -> list[SystemEvent]:
        """One agent message as events; unreadable JSON or audio is a transport error."""
        try:
            parsed = json.loads(message)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise self.fail(f"malformed JSON from the agent ({exc})") from None
        if not isinstance(parsed, dict):
            raise self.fail(f"agent message is not a JSON object: {type(parsed).__name__}")
        event = parsed.get("event")
        if event == "media":
            return self._audio(arrival_ns, parsed)
        if event == "mark":
            name = (parsed.get("mark") or {}).get("name")
            if not isinstance(name, str):
                raise self.fail("mark without a name from the agent")
            self._marks.append((max(arrival_ns, self._playing_until_ns), name))
            return [SystemEvent(EventKind.SIGNAL, arrival_ns, detail=parsed)]
        if event == "clear":
            return self._clear(arrival_ns, parsed)
        return [unknown_signal(arrival_ns, parsed, event=str(event))]

    def _audio(self, arrival_ns: int, message: dict[str, Any]) -> list[SystemEvent]:
        payload = (message.get("media") or {}).get("payload")
        if not isinstance(payload, str):
            raise self.fail("media without a payload from the agent")
        try:
            raw = base64.b64decode(payload, validate=True)
        except binascii.Error as exc:
            raise self.fail(f"media payload is not base64 ({exc})") from None
        if not raw:
            return []
        pcm = mulaw_decode(np.frombuffer(raw, dtype=np.uint8)).astype(np.float32) / 32768.0
        samples = resample(pcm, WIRE_RATE, self.card.sample_rate)
        start = max(arrival_ns, self._playing_until_ns)
        self._playing_until_ns = start + len(raw) * NS_PER_S // WIRE_RATE
        return [SystemEvent(EventKind.AUDIO, arrival_ns, samples)]

    def _clear(self, arrival_ns: int, message: dict[str, Any]) -> list[SystemEvent]:
        """Drop what has not played, as a phone would; pending marks are echoed at once."""
        events = [SystemEvent(EventKind.SIGNAL, arrival_ns, detail=message)]
        stop = playback_cut(arrival_ns, self._playing_until_ns, "clear")
        if stop is not None:
            self._playing_until_ns = arrival_ns
            events.append(stop)
        for _, name in self._marks:
            self.spawn(self._echo(name))
        self._marks.clear()
        return events
