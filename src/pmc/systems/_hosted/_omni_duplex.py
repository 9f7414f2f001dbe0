"""vLLM-Omni's full-duplex Realtime API (``/v1/realtime?duplex=1``): MiniCPM-o, PersonaPlex...

vLLM-Omni serves full-duplex models (MiniCPM-o 4.5, PersonaPlex, Nemotron VoiceChat) behind one
OpenAI-Realtime-shaped websocket (docs/wire-formats.md section 10). The model, not the client,
decides when to listen and when to speak, so the session is a full-duplex one: pmc streams the
live audio and then silence, and never commits. The card's ``[params]``
(:class:`OmniDuplexParams`) give the model's preset: its input format and rate, its output rate,
how much audio one append carries, and the session fields it takes.

What comes back is stamped on receipt like everything else: the answer's audio deltas (resampled
from the model's rate), its transcript, and every decision and turn event as a signal for the
trace. pmc plays the audio on its own clock and acknowledges how much of each answer has played
(``playback.ack``, cumulative per answer, as vLLM-Omni's client does); ``output_audio_buffer.
cleared`` stops the playback (an interruption). Every numbered event is acknowledged
(``session.event_ack``); a connection lost mid-rollout is resumed with ``session.resume`` from the
last event received, duplicates of a replay are dropped, and the audio that could not be sent
meanwhile goes out, in order, on the new connection: nothing is lost, and the trace says when.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from pmc.audio import FloatArray, resample, to_pcm16
from pmc.clock import Clock
from pmc.systems._adapter import (
    EventKind,
    Preload,
    RetryReason,
    SystemEvent,
    TransportError,
    adapter_params,
    register_adapter,
)
from pmc.systems._card import SystemCard
from pmc.systems._hosted._history import history_turns
from pmc.systems._hosted._session import HostedAdapter, HostedParams, api_key, without_audio

InputFormat = Literal["pcm16", "pcm_f32le"]
"""The input encodings the duplex presets declare (vLLM-Omni's ``AudioFormat``)."""
TEXT_DELTAS = frozenset(
    {"response.output_audio_transcript.delta", "response.output_text.delta", "response.text.delta"}
)
PASSING_ERRORS = {
    "rate_limit_exceeded": RetryReason.RATE_LIMITED,
    "server_busy": RetryReason.OVERLOADED,
    "capacity_exceeded": RetryReason.OVERLOADED,
}
"""``error`` codes after which a new session may well succeed."""


@dataclass(frozen=True)
class OmniDuplexParams(HostedParams):
    """A vLLM-Omni duplex card's ``[params]``: the model's preset (vLLM-Omni's ``clients``)."""

    model: str = ""
    """The served model, as ``session.model`` and the URL's ``model`` (empty: neither)."""
    input_format: InputFormat = "pcm16"
    input_rate: int = 16_000
    output_rate: int = 24_000
    """The rate the model answers at (each delta may say its own; pmc resamples to the card's)."""
    append_ms: int = 20
    """Audio per ``input_audio_buffer.append`` (Nemotron VoiceChat takes 80 ms)."""
    instructions: bool = True
    """Send the point's identity prompt as ``instructions``."""
    voice: str = ""
    ref_audio: str = ""
    overlap_policy: str = ""
    playback_commit_policy: str = ""
    extra_body: dict[str, Any] = field(default_factory=dict)
    """Model-specific session settings (``auto_response`` is always sent, true)."""
    ack_ms: float = 200.0
    """How often, in played audio, an answer's playback is acknowledged while it plays."""
    resume_attempts: int = 5
    """Connections tried, with a doubling wait from ``resume_backoff_s``, after one is lost."""
    resume_backoff_s: float = 0.25


@dataclass
class _Play:
    """One answer as pmc plays it (harness clock), for its acknowledgements."""

    response_id: str
    start_ns: int
    samples: int = 0
    acked_ms: int = -1
    done: bool = False
    """Its ``response.done`` came: once all of it has played, the last acknowledgement goes."""
    cut_ms: int | None = None
    """Where its playback was stopped (ms played), if it was."""

    def played_ms(self, now_ns: int, rate: int) -> int:
        total = self.samples * 1000 // rate
        if self.cut_ms is not None:
            return min(self.cut_ms, total)
        return int(min(max(0, now_ns - self.start_ns) // 1_000_000, total))

    def finished(self, now_ns: int, rate: int) -> bool:
        total = self.samples * 1000 // rate
        return self.cut_ms is not None or (self.done and self.played_ms(now_ns, rate) >= total)


@register_adapter("vllm-omni-duplex")
class OmniDuplex(HostedAdapter):
    """A full-duplex model served by vLLM-Omni.

    Card settings: ``endpoint`` (``ws://HOST:PORT/v1/realtime``; ``duplex=1``, ``autostart=0``
    and the model are added to its query), ``api_key_env`` (optional: a bearer token),
    ``[turn_detection]`` (sent as the session's ``turn_detection``; none by default: the model
    decides), ``[params]`` (:class:`OmniDuplexParams`).
    """

    VERSION = "1"
    HEARS_WHILE_SPEAKING = True
    SENDS_TEXT = False  # the transcript is kept where the model sends one; its speech counts
    PARAMS: ClassVar[type[Any]] = OmniDuplexParams
    params: OmniDuplexParams

    def __init__(self, card: SystemCard, clock: Clock) -> None:
        super().__init__(card, clock)
        self._chunk = np.zeros(0, dtype=np.float32)
        self._append_samples = self.input_rate * self.params.append_ms // 1000
        self._sent_ms = 0.0
        self._written_ms = 0.0
        """Input handed to the socket (``audio_end_ms`` of the last append written)."""
        self._session_id = ""
        self._token = ""
        self._last_seq = 0
        self._plays: dict[str, _Play] = {}
        self._cancelled: set[str] = set()
        self._resuming = False
        self._pending: list[str] = []
        self._closing = False
        self._next_ack_ns = 0

    # -- the card ---------------------------------------------------------------------------

    @classmethod
    def wire_input_rate(cls, card: SystemCard) -> int:
        """The preset's input rate."""
        return int(adapter_params(card).input_rate)

    @classmethod
    def prepare(cls, card: SystemCard) -> None:
        """Check the card; a key only where the card names its variable."""
        cls.check_card(card)
        if card.api_key_env:
            api_key(card)

    def session_key(self) -> str:
        """The key from the card's variable, or none where the card names no variable."""
        return super().session_key() if self.card.api_key_env else ""

    def auth_headers(self, key: str) -> dict[str, str]:
        """A bearer token, when the card has a key."""
        return {"Authorization": f"Bearer {key}"} if key else {}

    def endpoint(self) -> str:
        """The card's endpoint with ``duplex=1``, the model and ``autostart=0`` in its query.

        ``autostart=0``: the session opens with pmc's own ``session.update``, never a default
        one that the server would create from the URL's model (vLLM-Omni's client does the same).
        """
        parts = urlsplit(super().endpoint())
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        query.setdefault("duplex", "1")
        if self.params.model:
            query.setdefault("model", self.params.model)
        query["autostart"] = "0"
        return urlunsplit(parts._replace(query=urlencode(query)))

    # -- opening ------------------------------------------------------------------------------

    def is_ack(self, message: dict[str, Any]) -> bool:
        """``session.created`` answers ``session.update``."""
        return message.get("type") == "session.created"

    def session_messages(self, preload: Preload) -> list[dict[str, Any]]:
        """One ``session.update`` in the shape of vLLM-Omni's ``SessionConfig``."""
        p = self.params
        session: dict[str, Any] = {
            "modalities": ["audio", "text"],
            "input_audio_format": p.input_format,
            "output_audio_format": "pcm16",
            "sample_rate_hz": p.input_rate,
            "audio": {
                "input": {"sample_rate_hz": p.input_rate},
                "output": {"sample_rate_hz": p.output_rate},
            },
            "turn_detection": dict(self.card.turn_detection) or None,
        }
        if p.model:
            session["model"] = p.model
        if p.instructions:
            session["instructions"] = preload.identity_prompt
        optional = (
            ("voice", p.voice),
            ("ref_audio", p.ref_audio),
            ("overlap_policy", p.overlap_policy),
            ("playback_commit_policy", p.playback_commit_policy),
        )
        session.update({name: value for name, value in optional if value})
        session["extra_body"] = {"auto_response": True, **p.extra_body}
        return [{"type": "session.update", "session": session}]

    def history_messages(self, preload: Preload) -> list[dict[str, Any]]:
        """One ``conversation.item.create`` per completed turn, as text or as audio (the card's).

        Audio goes in the session's input format for the other speaker's turns and as PCM16 at
        the model's rate for its own, with their transcripts.
        """
        messages = []
        for i, turn in enumerate(history_turns(preload, self.card)):
            role = "assistant" if turn.assistant else "user"
            content: dict[str, Any]
            if turn.audio is None:
                content = {"type": "output_text" if turn.assistant else "input_text"}
                content["text"] = turn.text
            elif turn.assistant:
                audio = self._encode(turn.at_rate(self.params.output_rate), "pcm16")
                content = {"type": "output_audio", "audio": audio, "transcript": turn.text}
            else:
                audio = self._encode(turn.at_rate(self.input_rate), self.params.input_format)
                content = {"type": "input_audio", "audio": audio, "transcript": turn.text}
            item = {"id": f"pmc_history_{i}", "type": "message", "role": role}
            messages.append(
                {"type": "conversation.item.create", "item": item | {"content": [content]}}
            )
        return messages

    @staticmethod
    def _encode(samples: FloatArray, encoding: InputFormat) -> str:
        if encoding == "pcm_f32le":
            raw = np.clip(samples, -1.0, 1.0).astype("<f4").tobytes()
        else:
            raw = to_pcm16(samples).astype("<i2", copy=False).tobytes()
        return base64.b64encode(raw).decode("ascii")

    # -- streaming ----------------------------------------------------------------------------

    def audio_message(self, data: str) -> dict[str, Any]:
        """``input_audio_buffer.append`` of one chunk, in the preset's format, with its times."""
        duration_ms = self._append_samples * 1000 / self.input_rate
        self._sent_ms += duration_ms
        return {
            "type": "input_audio_buffer.append",
            "audio": data,
            "format": self.params.input_format,
            "sample_rate_hz": self.input_rate,
            "duration_ms": round(duration_ms),
            "audio_end_ms": round(self._sent_ms),
        }

    async def send_frame(self, samples: FloatArray) -> None:
        """Resample, append in the preset's chunks, and acknowledge what has played."""
        chunk = self._resampler.push(samples)
        self._chunk = np.concatenate([self._chunk, chunk]) if len(self._chunk) else chunk
        size = self._append_samples
        while len(self._chunk) >= size:
            piece, self._chunk = self._chunk[:size], self._chunk[size:]
            await self.send_json(self.audio_message(self._encode(piece, self.params.input_format)))
        await self._acknowledge(self.clock.now_ns())

    async def end_of_input(self) -> None:
        """Nothing to signal: the model finds the turn's end itself."""

    async def send_json(self, message: dict[str, Any]) -> None:
        """Send one client event; while the connection is being resumed it waits its turn."""
        text = json.dumps(message, separators=(",", ":"))
        if self._resuming:
            self._pending.append(text)
            return
        try:
            await self.send(text)
        except TransportError:
            if not self._resumable():
                raise
            self._pending.append(text)  # the reader finds the connection lost and resumes
            return
        if message.get("type") == "input_audio_buffer.append":
            self._written_ms = float(message["audio_end_ms"])

    async def _acknowledge(self, now_ns: int) -> None:
        """``playback.ack`` for each answer every ``ack_ms`` of it played, and once it ends."""
        if now_ns < self._next_ack_ns:
            return
        self._next_ack_ns = now_ns + round(self.params.ack_ms * 1e6)
        for response_id, play in list(self._plays.items()):
            played = play.played_ms(now_ns, self.OUTPUT_RATE)
            finished = play.finished(now_ns, self.OUTPUT_RATE)
            if played > play.acked_ms or finished:
                play.acked_ms = played
                await self.send_json(
                    {
                        "type": "playback.ack",
                        "played_ms": played,
                        "committed_ms": played,
                        "response_id": response_id,
                        "item_id": f"item_{response_id}",
                    }
                )
            if finished:
                del self._plays[response_id]

    # -- what arrives -------------------------------------------------------------------------

    def translate(self, arrival_ns: int, message: dict[str, Any]) -> list[SystemEvent]:
        """Audio, transcript, stops and errors; every decision and turn event as a signal."""
        kind = message.get("type")
        if not isinstance(kind, str):
            raise self.fail(f"server event without a type: {sorted(message)}")
        seq = message.get("server_event_seq")
        if isinstance(seq, int):
            if seq <= self._last_seq:
                return []  # replayed after a resume, and already received
            self._last_seq = seq
            self.spawn(self.send_json({"type": "session.event_ack", "server_event_seq": seq}))
        if kind == "response.output_audio.delta":
            return self._audio(arrival_ns, message)
        if kind in TEXT_DELTAS:
            delta = message.get("delta")
            if message.get("response_id") in self._cancelled or not isinstance(delta, str):
                return []
            return [SystemEvent(EventKind.TEXT, arrival_ns, text=delta, detail={"type": kind})]
        if kind == "error":
            raise self._error(message)
        events = [SystemEvent(EventKind.SIGNAL, arrival_ns, detail=without_audio(message))]
        response_id = message.get("response_id")
        if kind in ("session.created", "session.resumed"):
            session = message.get("session")
            session = session if isinstance(session, dict) else {}
            found = session.get("session_id") or session.get("id") or message.get("session_id")
            self._session_id = str(found or self._session_id)
            self._token = str(message.get("resume_token") or self._token)
        elif kind == "output_audio_buffer.cleared":
            stop = self._cut(arrival_ns, response_id)
            events.extend([stop] if stop is not None else [])
        elif kind == "response.done" and isinstance(response_id, str):
            if response_id in self._plays:
                self._plays[response_id].done = True
            status = message.get("response", {}).get("status")
            if status == "cancelled":
                self._cancelled.add(response_id)
        elif kind in ("session.closed", "session.expired") and not self._closing:
            raise self.fail(f"the server ended the session ({kind}: {message.get('reason')})")
        elif kind in ("session.resync_required", "session.replaced"):
            raise self.fail(f"the session cannot go on ({kind}: {message.get('reason', '')})")
        return events

    def _audio(self, arrival_ns: int, message: dict[str, Any]) -> list[SystemEvent]:
        response_id = str(message.get("response_id") or "")
        if response_id in self._cancelled:
            return []  # the rest of an answer whose playback was stopped
        delta = message.get("delta")
        if not isinstance(delta, str):
            raise self.fail("response.output_audio.delta without an audio delta")
        try:
            raw = base64.b64decode(delta, validate=True)
        except binascii.Error as exc:
            raise self.fail(f"response.output_audio.delta: audio is not base64 ({exc})") from None
        if message.get("format", "pcm16") == "pcm_f32le":
            samples = np.frombuffer(raw, dtype="<f4", count=len(raw) // 4).astype(np.float32)
        else:
            pcm = np.frombuffer(raw, dtype="<i2", count=len(raw) // 2)
            samples = pcm.astype(np.float32) / 32768.0
        rate = message.get("sample_rate_hz") or self.params.output_rate
        samples = resample(samples, int(rate), self.OUTPUT_RATE)
        if not len(samples):
            return []
        play = self._plays.get(response_id)
        if play is None:
            play = _Play(response_id, max(arrival_ns, self._playing_until_ns))
            self._plays[response_id] = play
        play.samples += len(samples)
        detail = {
            "type": "response.output_audio.delta",
            "response_id": response_id,
            "item_id": message.get("item_id"),
            "server_event_seq": message.get("server_event_seq"),
        }
        return [SystemEvent(EventKind.AUDIO, arrival_ns, samples=samples, detail=detail)]

    def _cut(self, at_ns: int, response_id: Any) -> SystemEvent | None:
        """The server cleared the output: playback stops here; the answer's rest is ignored."""
        if isinstance(response_id, str):
            self._cancelled.add(response_id)
            play = self._plays.get(response_id)
            if play is not None:
                play.cut_ms = play.played_ms(at_ns, self.OUTPUT_RATE)
                self._next_ack_ns = 0  # the last acknowledgement goes with the next frame
        return self.interrupt(at_ns, "output_audio_buffer.cleared")

    def _error(self, message: dict[str, Any]) -> TransportError:
        error = message.get("error")
        error = error if isinstance(error, dict) else {}
        code = str(error.get("code") or "")
        said = "/".join(str(n) for n in (error.get("type"), code) if n) or "no type"
        text = str(error.get("message", ""))
        return self.fail(f"server error event ({said}): {text}", PASSING_ERRORS.get(code))

    # -- a lost connection --------------------------------------------------------------------

    def _resumable(self) -> bool:
        return bool(self._session_id and self._token) and not self._closing

    async def reconnect(self, lost: ConnectionClosed) -> ClientConnection | None:
        """``session.resume`` on a new connection, then what could not be sent meanwhile.

        The server replays the events after the last one received; :meth:`translate` drops
        any that had already come.
        """
        if not self._resumable():
            return None
        self._resuming = True
        lost_ns, written_ms = self.clock.now_ns(), self._written_ms
        for attempt in range(self.params.resume_attempts):
            await asyncio.sleep(self.params.resume_backoff_s * 2**attempt)
            try:
                ws = await self.open(self.endpoint())
                resume = {
                    "type": "session.resume",
                    "session_id": self._session_id,
                    "resume_token": self._token,
                    "last_received_server_event_seq": self._last_seq,
                }
                await ws.send(json.dumps(resume, separators=(",", ":")))
                while self._pending:
                    await ws.send(self._pending[0])
                    del self._pending[0]  # only once sent: a failed send is tried again
            except (TransportError, ConnectionClosed):
                continue
            self._resuming = False
            detail = {
                "type": "pmc.resumed",
                "attempt": attempt + 1,
                "gap_ms": round((self.clock.now_ns() - lost_ns) / 1e6, 3),
                "lost": str(lost),
                "last_received_server_event_seq": resume["last_received_server_event_seq"],
                # What had been handed to the lost connection: the server may not have read all
                # of it (its protocol acknowledges no input), and it is not sent twice.
                "written_ms": written_ms,
            }
            self.emit(EventKind.SIGNAL, detail=detail)
            return ws
        self._resuming = False
        return None

    async def close(self) -> None:
        """``session.close`` (so the server frees the session at once), then the socket."""
        self._closing = True
        if self._ws is not None and not self._resuming:
            with contextlib.suppress(TransportError):
                await self.send(json.dumps({"type": "session.close"}))
        await super().close()
