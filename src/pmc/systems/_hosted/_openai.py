"""OpenAI Realtime (GA events, beta aliases accepted) over a plain websocket.

Wire details in docs/wire-formats.md section 6. The session is configured with one
``session.update``: instructions (the identity prompt), audio in and out as 24 kHz PCM, and turn
detection from the card (server VAD or semantic VAD) at pause points, where the API's endpointer
is the policy under test, or ``null`` at turn-end and recall points, where the harness commits
the input buffer and asks for a response (paper appendix C). History goes in as one
``conversation.item.create`` per completed turn.

Interruption: when the server hears speech start while the client is still playing the answer,
the client stops playback (the harness then drops what was not played), ignores the rest of
that response's audio, and tells the server how much of the item was heard with
``conversation.item.truncate``, as a client does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from pmc.audio import FloatArray
from pmc.clock import Clock
from pmc.systems._adapter import (
    EventKind,
    LatencyMark,
    Preload,
    RetryReason,
    SystemEvent,
    TransportError,
    register_adapter,
    unknown_signal,
)
from pmc.systems._card import SystemCard
from pmc.systems._hosted._history import history_turns
from pmc.systems._hosted._pcm import encode
from pmc.systems._hosted._session import HostedAdapter, HostedParams, without_audio

SERVER_EVENTS = frozenset(
    """
    conversation.created conversation.item.added conversation.item.created
    conversation.item.deleted conversation.item.done
    conversation.item.input_audio_transcription.completed
    conversation.item.input_audio_transcription.delta
    conversation.item.input_audio_transcription.failed
    conversation.item.input_audio_transcription.segment conversation.item.retrieved
    conversation.item.truncated error input_audio_buffer.cleared input_audio_buffer.committed
    input_audio_buffer.dtmf_event_received input_audio_buffer.speech_started
    input_audio_buffer.speech_stopped input_audio_buffer.timeout_triggered
    mcp_list_tools.completed mcp_list_tools.failed mcp_list_tools.in_progress
    output_audio_buffer.cleared output_audio_buffer.started output_audio_buffer.stopped
    rate_limits.updated response.content_part.added response.content_part.done
    response.created response.done response.function_call_arguments.delta
    response.function_call_arguments.done response.mcp_call.completed response.mcp_call.failed
    response.mcp_call.in_progress response.mcp_call_arguments.delta
    response.mcp_call_arguments.done response.output_audio.delta response.output_audio.done
    response.output_audio_transcript.delta response.output_audio_transcript.done
    response.output_item.added response.output_item.done response.output_text.delta
    response.output_text.done session.created session.updated
    response.audio.delta response.audio.done response.audio_transcript.delta
    response.audio_transcript.done response.text.delta response.text.done
    """.split()
)
"""Every server event of the GA API (the ``openai`` package's ``RealtimeServerEvent`` union),
then the beta names of the audio and text events. Anything else is an event the API added since:
kept in the trace as a signal and counted, never fatal by itself."""
ENDPOINTED_EVENTS = frozenset({"input_audio_buffer.speech_stopped", "input_audio_buffer.committed"})
"""Server events that mark the endpointer's decision: its VAD heard speech stop, or the buffer
was committed (the harness's end of input at turn ends, or the VAD's own commit)."""
RESPONSE_REQUESTED = "pmc.response_requested"
"""The signal an adapter records when it asks for the reply after a protocol wait (Grok)."""
RATE_LIMIT_CODES = frozenset({"rate_limit_exceeded", "rate_limit_error", "too_many_requests"})
"""``error`` codes or types that mean the account is over its rate limit: try again later."""
OVERLOAD_CODES = frozenset({"server_error", "overloaded", "server_overloaded", "unavailable"})
"""``error`` codes or types that mean the service is briefly unable to answer."""
_RETRY_IN = re.compile(r"try again in ([0-9]+(?:\.[0-9]+)?)\s*(ms|s)\b", re.IGNORECASE)
"""How a rate-limit message says how long to wait ("Please try again in 1.2s")."""

AUDIO_DELTAS = frozenset({"response.output_audio.delta", "response.audio.delta"})
TEXT_DELTAS = frozenset(
    {
        "response.output_audio_transcript.delta",
        "response.audio_transcript.delta",
        "response.output_text.delta",
        "response.text.delta",
    }
)
DEFAULT_MODEL_VOICE = "alloy"
"""The voice the paper's GPT Realtime runs used (docs/decisions.md section 1)."""


@dataclass
class _Item:
    """The answer item whose audio is being played, for truncating it at a barge-in."""

    item_id: str
    response_id: str
    start_ns: int
    """When its first sample started playing (harness clock)."""
    samples: int = 0


@dataclass(frozen=True)
class RealtimeParams(HostedParams):
    """An OpenAI Realtime card's ``[params]``."""

    voice: str = DEFAULT_MODEL_VOICE


class RealtimeEvents(HostedAdapter):
    """The OpenAI event vocabulary, shared by OpenAI Realtime and xAI's Grok Voice.

    Subclasses give the session shape and how a response is asked for after a commit.
    """

    SERVER_EVENTS: ClassVar[frozenset[str]] = SERVER_EVENTS
    HEARS_WHILE_SPEAKING = True  # listen() turns the card's turn detection back on
    PARAMS: ClassVar[type[Any]] = RealtimeParams

    @classmethod
    def latency_mark(cls, detail: Mapping[str, Any]) -> LatencyMark | None:
        """Its VAD's ``speech_stopped``, or ``committed`` where the harness ended the turn."""
        if detail.get("type") in ENDPOINTED_EVENTS:
            return LatencyMark.ENDPOINTED
        if detail.get("type") == RESPONSE_REQUESTED:
            return LatencyMark.REQUESTED
        return None

    params: RealtimeParams

    def __init__(self, card: SystemCard, clock: Clock) -> None:
        super().__init__(card, clock)
        self.voice = self.params.voice
        # A barge-in cancels the answer unless the card turns that off (API default: on).
        self.barge_in = bool(card.turn_detection.get("interrupt_response", True))
        self._cancelled: set[str] = set()
        """Responses whose remaining audio and text the client ignores (it stopped playing)."""
        self._item: _Item | None = None

    def auth_headers(self, key: str) -> dict[str, str]:
        """Bearer authentication (both OpenAI and xAI)."""
        return {"Authorization": f"Bearer {key}"}

    def is_ack(self, message: dict[str, Any]) -> bool:
        """``session.updated`` acknowledges ``session.update``."""
        return message.get("type") == "session.updated"

    def audio_message(self, data: str) -> dict[str, Any]:
        """``input_audio_buffer.append``."""
        return {"type": "input_audio_buffer.append", "audio": data}

    def turn_detection(self) -> dict[str, Any] | None:
        """The card's turn detection at pause points (and once listening); off (None) elsewhere."""
        return dict(self.card.turn_detection) if self.endpointing else None

    async def listen(self) -> None:
        """The reply has started at a talk-over point: the card's turn detection goes back on.

        The server then hears the person over it; as a client does, pmc stops its playback and
        truncates the answer when the server says speech started.
        """
        self.endpointing = True
        await self.send_json(self.listen_message())

    def listen_message(self) -> dict[str, Any]:
        """The ``session.update`` that turns the card's turn detection on (GA shape)."""
        input_ = {"turn_detection": self.turn_detection()}
        return {
            "type": "session.update",
            "session": {"type": "realtime", "audio": {"input": input_}},
        }

    def translate(self, arrival_ns: int, message: dict[str, Any]) -> list[SystemEvent]:
        """Audio and transcript deltas, barge-ins, errors; every other event as a signal."""
        kind = message.get("type")
        if not isinstance(kind, str):
            raise self.fail(f"server event without a type: {sorted(message)}")
        if kind not in self.SERVER_EVENTS:
            return [unknown_signal(arrival_ns, without_audio(message), event=kind)]
        if kind in AUDIO_DELTAS:
            return self._audio(arrival_ns, message)
        if kind in TEXT_DELTAS:
            if message.get("response_id") in self._cancelled:
                return []
            delta = message.get("delta")
            if not isinstance(delta, str):
                raise self.fail(f"{kind} without a text delta")
            return [SystemEvent(EventKind.TEXT, arrival_ns, text=delta, detail={"type": kind})]
        if kind == "error":
            raise self.error_event(message)
        events = [SystemEvent(EventKind.SIGNAL, arrival_ns, detail=without_audio(message))]
        if kind == "response.created":
            self.decoder.reset()
        elif kind == "input_audio_buffer.speech_started" and self.barge_in:
            stop = self._barge_in(arrival_ns)
            if stop is not None:
                events.append(stop)
        return events

    def error_event(self, message: dict[str, Any]) -> TransportError:
        """The rollout's end, passing (a rate limit, an overload) or not, in the server's words."""
        error = message.get("error")
        error = error if isinstance(error, dict) else {}
        names = {str(error.get("type", "")), str(error.get("code", ""))}
        retry = None
        if names & RATE_LIMIT_CODES:
            retry = RetryReason.RATE_LIMITED
        elif names & OVERLOAD_CODES:
            retry = RetryReason.OVERLOADED
        text = str(error.get("message", ""))
        found = _RETRY_IN.search(text)
        wait = None
        if found:
            wait = float(found.group(1)) / (1000 if found.group(2).lower() == "ms" else 1)
        said = "/".join(n for n in (error.get("type"), error.get("code")) if n)
        return self.fail(f"server error event ({said or 'no type'}): {text}", retry, wait)

    def delta_samples(self, delta: str) -> FloatArray:
        """An audio delta's samples at :attr:`OUTPUT_RATE` (ValueError if it is not base64)."""
        return self.decoder.decode(delta)

    def _audio(self, arrival_ns: int, message: dict[str, Any]) -> list[SystemEvent]:
        response, item = message.get("response_id"), message.get("item_id")
        if response in self._cancelled:
            return []  # the rest of an answer the client already stopped playing
        delta = message.get("delta")
        if not isinstance(delta, str):
            raise self.fail(f"{message.get('type')} without an audio delta")
        try:
            samples = self.delta_samples(delta)
        except ValueError as exc:
            raise self.fail(f"{message.get('type')}: {exc}") from None
        if isinstance(item, str):
            if self._item is None or self._item.item_id != item:
                start = max(arrival_ns, self._playing_until_ns)
                self._item = _Item(item, str(response or ""), start)
            self._item.samples += len(samples)
        if not len(samples):
            return []
        detail = {"type": message.get("type"), "response_id": response, "item_id": item}
        return [SystemEvent(EventKind.AUDIO, arrival_ns, samples=samples, detail=detail)]

    def _barge_in(self, arrival_ns: int) -> SystemEvent | None:
        """The user spoke over the answer: stop playing it and say how much was heard."""
        stop = self.interrupt(arrival_ns, "input_audio_buffer.speech_started")
        if stop is None or self._item is None:
            return stop
        cut, self._item = self._item, None
        heard_ms = min(
            max(0, arrival_ns - cut.start_ns) // 1_000_000,
            cut.samples * 1000 // self.OUTPUT_RATE,
        )
        if cut.response_id:
            self._cancelled.add(cut.response_id)
        self.spawn(
            self.send_json(
                {
                    "type": "conversation.item.truncate",
                    "item_id": cut.item_id,
                    "content_index": 0,
                    "audio_end_ms": int(heard_ms),
                }
            )
        )
        detail = {**stop.detail, "item_id": cut.item_id, "heard_ms": int(heard_ms)}
        return SystemEvent(stop.kind, stop.arrival_ns, detail=detail)

    def history_messages(self, preload: Preload) -> list[dict[str, Any]]:
        """One ``conversation.item.create`` per turn, as text or as audio (the card's history).

        Text: ``input_text``, and ``output_text`` for the system's own turns (GA names). Audio:
        ``input_audio``, and ``output_audio`` with its transcript, each base64 PCM16 in the
        session's formats; the SDK notes an ``input_audio`` transcript is not sent to the model.
        """
        messages = []
        for turn in history_turns(preload, self.card):
            role = "assistant" if turn.assistant else "user"
            if turn.audio is None:
                kind = "output_text" if turn.assistant else "input_text"
                content = [{"type": kind, "text": turn.text}]
            else:
                kind = "output_audio" if turn.assistant else "input_audio"
                rate = self.OUTPUT_RATE if turn.assistant else self.input_rate
                audio = encode(turn.at_rate(rate))
                content = [{"type": kind, "audio": audio, "transcript": turn.text}]
            messages.append(
                {
                    "type": "conversation.item.create",
                    "item": {"type": "message", "role": role, "content": content},
                }
            )
        return messages


@register_adapter("openai-realtime")
class OpenAIRealtime(RealtimeEvents):
    """GPT Realtime: GA session shape; commit and ``response.create`` back to back.

    Card settings: ``endpoint`` (``wss://api.openai.com/v1/realtime?model=...``),
    ``api_key_env``, ``[turn_detection]`` (sent as the session's turn detection at pause
    points), ``params.voice``.
    """

    VERSION = "1"

    def session_messages(self, preload: Preload) -> list[dict[str, Any]]:
        """One GA ``session.update``."""
        audio_format = {"type": "audio/pcm", "rate": self.input_rate}
        return [
            {
                "type": "session.update",
                "session": {
                    "type": "realtime",
                    "instructions": preload.identity_prompt,
                    "output_modalities": ["audio"],
                    "audio": {
                        "input": {"format": audio_format, "turn_detection": self.turn_detection()},
                        "output": {
                            "format": {"type": "audio/pcm", "rate": self.OUTPUT_RATE},
                            "voice": self.voice,
                        },
                    },
                },
            }
        ]

    async def end_of_input(self) -> None:
        """Commit the input buffer and ask for a response (turn detection is off)."""
        await self.send_json({"type": "input_audio_buffer.commit"})
        await self.send_json({"type": "response.create"})
