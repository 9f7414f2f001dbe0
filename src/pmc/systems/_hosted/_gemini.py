"""Gemini Live (BidiGenerateContent) over a plain websocket, camelCase JSON.

Wire details in docs/wire-formats.md section 6 and docs/decisions.md section 1. The first
message is ``setup``: the model, audio answers with their transcription, the identity prompt as
the system instruction, and the history taken as ``clientContent`` (``historyConfig``); the
server answers ``setupComplete``. History then goes in one ``clientContent`` whose
``turnComplete`` closes the initial history without asking for an answer. At pause points
automatic activity detection decides the turn (the card's ``[turn_detection]``); at turn-end and
recall points it is disabled, ``activityStart`` precedes the first audio and ``activityEnd``
ends the input. At talk-over points it stays on, as at pauses: set once at setup, it could not be
turned on once the reply started, to hear the person come in over it (``serverContent``'s
``interrupted`` then stops the answer).
Input audio goes at 24 kHz, as the paper's harness sent it: Gemini takes any rate and
resamples it (its native rate is 16 kHz), and resampling here would hold back part of each frame
(soxr's filter delay, released in bursts) and so blur when the server hears what. A card may set
``params.input_rate = 16000`` to send Gemini's native rate. Answers come at 24 kHz. The key
travels in the ``x-goog-api-key`` header, as Google's own SDK sends it, never in the URL.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from pmc.audio import FloatArray
from pmc.clock import Clock
from pmc.systems._adapter import (
    EventKind,
    Preload,
    RetryReason,
    SystemEvent,
    adapter_params,
    register_adapter,
    unknown_signal,
)
from pmc.systems._card import SystemCard
from pmc.systems._hosted._history import HistoryMode, history_mode, history_turns
from pmc.systems._hosted._pcm import encode
from pmc.systems._hosted._session import HostedAdapter, HostedParams

SERVER_FIELDS = frozenset(
    {
        "setupComplete",
        "serverContent",
        "toolCall",
        "toolCallCancellation",
        "usageMetadata",
        "goAway",
        "sessionResumptionUpdate",
        "voiceActivityDetectionSignal",
        "voiceActivity",
    }
)
"""The fields of a server message (``google-genai``'s ``LiveServerMessage``, camelCase)."""
DEFAULT_VOICE = "Kore"
"""The voice of the paper's Gemini runs (docs/decisions.md section 1)."""
DEFAULT_MODEL = "models/gemini-3.1-flash-live-preview"


@dataclass(frozen=True)
class GeminiParams(HostedParams):
    """A Gemini Live card's ``[params]``."""

    model: str = DEFAULT_MODEL
    voice: str = DEFAULT_VOICE
    activity_handling: str = "START_OF_ACTIVITY_INTERRUPTS"
    """Gemini's ``realtimeInputConfig.activityHandling``."""
    input_rate: int = 24_000
    """The rate live audio is sent at."""
    explicit_vad_signal: bool = False
    """Ask for ``voiceActivity`` messages, where the server's activity detection says it heard
    speech start and end (``setup.explicitVadSignal``; Vertex AI's Live API, not the Developer
    API): a detector card's events (docs/architecture.md "Trade-off curves")."""


@register_adapter("gemini-live")
class GeminiLive(HostedAdapter):
    """Gemini Live.

    Card settings: ``endpoint`` (the BidiGenerateContent websocket), ``api_key_env``,
    ``[turn_detection]`` (the ``automaticActivityDetection`` settings used at pause points,
    camelCase), ``params.model``, ``params.voice``, ``params.activity_handling``,
    ``params.input_rate``, ``params.explicit_vad_signal``.
    """

    VERSION = "2"
    HEARS_WHILE_SPEAKING = True
    ENDPOINTS_TALK_OVER = True  # its activity detection is set once, at setup
    PARAMS: ClassVar[type[Any]] = GeminiParams
    params: GeminiParams

    def __init__(self, card: SystemCard, clock: Clock) -> None:
        super().__init__(card, clock)
        self.model = self.params.model
        self.voice = self.params.voice
        self.activity_handling = self.params.activity_handling
        self._activity_open = False

    @classmethod
    def wire_input_rate(cls, card: SystemCard) -> int:
        """24 kHz unless the card sets ``params.input_rate``."""
        return int(adapter_params(card).input_rate)

    def auth_headers(self, key: str) -> dict[str, str]:
        """The API key header Google's SDK uses."""
        return {"x-goog-api-key": key}

    def session_messages(self, preload: Preload) -> list[dict[str, Any]]:
        """The ``setup`` message."""
        if self.endpointing:
            detection = {"disabled": False, **self.card.turn_detection}
            realtime: dict[str, Any] = {
                "automaticActivityDetection": detection,
                "activityHandling": self.activity_handling,
            }
        else:
            realtime = {"automaticActivityDetection": {"disabled": True}}
        voice = {"voiceConfig": {"prebuiltVoiceConfig": {"voiceName": self.voice}}}
        setup: dict[str, Any] = {
            "model": self.model,
            "generationConfig": {"responseModalities": ["AUDIO"], "speechConfig": voice},
            "systemInstruction": {"parts": [{"text": preload.identity_prompt}]},
            "outputAudioTranscription": {},
            "realtimeInputConfig": realtime,
            "historyConfig": {"initialHistoryInClientContent": True},
        }
        if self.params.explicit_vad_signal:
            setup["explicitVadSignal"] = True
        return [{"setup": setup}]

    def is_ack(self, message: dict[str, Any]) -> bool:
        """``setupComplete`` acknowledges ``setup``."""
        return "setupComplete" in message

    def history_messages(self, preload: Preload) -> list[dict[str, Any]]:
        """The history as ``clientContent``; ``turnComplete`` on the last ends the history.

        Text: every turn in one message, as text parts. Audio (the card's history): the user's
        turns as ``inlineData`` parts of PCM16 at the live input's rate, its MIME type naming
        the rate as live audio's does, one message per turn, since the whole history in one
        message can pass a websocket's message limit (a megabyte by default).
        """
        turns = []
        for turn in history_turns(preload, self.card):
            if turn.audio is None:
                part: dict[str, Any] = {"text": turn.text}
            else:
                rate = self.OUTPUT_RATE if turn.assistant else self.input_rate
                mime = f"audio/pcm;rate={rate}"
                part = {"inlineData": {"mimeType": mime, "data": encode(turn.at_rate(rate))}}
            turns.append({"role": "model" if turn.assistant else "user", "parts": [part]})
        if not turns:
            return []
        if history_mode(self.card) is HistoryMode.TEXT:
            return [{"clientContent": {"turns": turns, "turnComplete": True}}]
        last = len(turns) - 1
        return [
            {"clientContent": {"turns": [turn], "turnComplete": i == last}}
            for i, turn in enumerate(turns)
        ]

    def audio_message(self, data: str) -> dict[str, Any]:
        """``realtimeInput.audio``."""
        mime = f"audio/pcm;rate={self.input_rate}"
        return {"realtimeInput": {"audio": {"mimeType": mime, "data": data}}}

    async def send_frame(self, samples: FloatArray) -> None:
        """With detection off, the first frame is preceded by ``activityStart``."""
        if not self.endpointing and not self._activity_open:
            self._activity_open = True
            await self.send_json({"realtimeInput": {"activityStart": {}}})
        await super().send_frame(samples)

    async def end_of_input(self) -> None:
        """``activityEnd``: the user's turn is over, answer it."""
        if not self._activity_open:
            await self.send_json({"realtimeInput": {"activityStart": {}}})
        self._activity_open = False
        await self.send_json({"realtimeInput": {"activityEnd": {}}})

    def translate(self, arrival_ns: int, message: dict[str, Any]) -> list[SystemEvent]:
        """Audio parts, transcription, interruptions; every other field as a signal."""
        if not message:
            raise self.fail("an empty server message")
        unknown = sorted(set(message) - SERVER_FIELDS)
        drift = []
        if unknown:
            drift.append(unknown_signal(arrival_ns, _trimmed(message), fields=unknown))
            message = {k: v for k, v in message.items() if k in SERVER_FIELDS}
            if not message:
                return drift
        if "goAway" in message:
            raise self.fail(
                f"the server is going away ({message['goAway']})", RetryReason.GOING_AWAY
            )
        content = message.get("serverContent")
        if content is None:
            return [*drift, SystemEvent(EventKind.SIGNAL, arrival_ns, detail=message)]
        if not isinstance(content, dict):
            raise self.fail("serverContent is not an object")
        events: list[SystemEvent] = drift
        if content.get("interrupted"):
            stop = self.interrupt(arrival_ns, "serverContent.interrupted")
            if stop is not None:
                events.append(stop)
            self.decoder.reset()
        turn = content.get("modelTurn") or {}
        for part in turn.get("parts", []) if isinstance(turn, dict) else []:
            events.extend(self._part(arrival_ns, part))
        spoken = content.get("outputTranscription") or {}
        if isinstance(spoken, dict) and spoken.get("text"):
            text = str(spoken["text"])
            events.append(
                SystemEvent(EventKind.TEXT, arrival_ns, text=text, detail={"type": "transcription"})
            )
        flags = {k: v for k, v in content.items() if k not in ("modelTurn", "outputTranscription")}
        if flags:
            detail = {"serverContent": flags}
            events.append(SystemEvent(EventKind.SIGNAL, arrival_ns, detail=detail))
        return events

    def _part(self, arrival_ns: int, part: Any) -> list[SystemEvent]:
        """One part of a model turn: inline audio, or text."""
        if not isinstance(part, dict):
            raise self.fail("a modelTurn part is not an object")
        inline = part.get("inlineData")
        if isinstance(inline, dict):
            try:
                samples = self.decoder.decode(str(inline.get("data", "")))
            except ValueError as exc:
                raise self.fail(f"inlineData: {exc}") from None
            if not len(samples):
                return []
            detail = {"mimeType": inline.get("mimeType")}
            return [SystemEvent(EventKind.AUDIO, arrival_ns, samples=samples, detail=detail)]
        if isinstance(part.get("text"), str):
            return [
                SystemEvent(EventKind.TEXT, arrival_ns, text=part["text"], detail={"type": "part"})
            ]
        return []


def _trimmed(value: Any) -> Any:
    """A server message for the trace: every long base64 ``data`` replaced by its length."""
    if isinstance(value, dict):
        return {
            k: f"<{len(v)} base64 chars>"
            if k == "data" and isinstance(v, str) and len(v) > 64
            else _trimmed(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_trimmed(v) for v in value]
    return value
