"""A fake Gemini Live server (BidiGenerateContent, camelCase JSON).

docs/wire-formats.md section 6: the client's first message is ``setup``, answered by
``setupComplete``; history comes as ``clientContent``; live audio as ``realtimeInput.audio``,
PCM16 at the rate its ``mimeType`` names (Gemini resamples any rate; it must not change within a
session). With automatic activity detection the fake's endpointer ends the turn (its
``prefixPaddingMs`` is the speech needed before a start counts, ``silenceDurationMs`` the
silence that ends it); with it disabled the client marks the turn with ``activityStart`` and
``activityEnd``. With ``explicitVadSignal`` in the setup (Vertex AI's Live API) the fake reports
its endpointer's decisions as ``voiceActivity`` messages (``ACTIVITY_START``/``ACTIVITY_END``,
with the ``audioOffset`` they refer to); otherwise it says nothing of them. Answers come as
``serverContent.modelTurn`` parts (several per message, split at odd byte counts) with
``outputTranscription``; a barge-in is ``serverContent.interrupted``. Gemini reports a bad
client message by closing the socket (code 1007), as the fake does; it pushes back the same way
(1013 for a rate limit; ``goAway`` then 1001 for a session it ends).
"""

from __future__ import annotations

import base64
import re
from typing import Any

from pmc.testing.hosted._behaviour import AnswerRecord, HistoryItem
from pmc.testing.hosted._endpointer import SPEECH_RMS, WINDOW_MS, Change, VadEvent
from pmc.testing.hosted._pcm import decode_pcm16
from pmc.testing.hosted._session import FakeSession
from pmc.testing.hosted._voice import b64

INPUT_MIME = re.compile(r"audio/pcm;rate=(\d+)")
MODEL = re.compile(r"(projects/[^/]+/locations/[^/]+/)?(publishers/google/)?models/[^/]+")
"""The Developer API's ``models/X``, or Vertex AI's
``[projects/P/locations/L/]publishers/google/models/X``."""
OUTPUT_MIME = "audio/pcm;rate=24000"
DEFAULT_SILENCE_MS = 500
"""Silence that ends a turn when ``silenceDurationMs`` is not set (the fake's choice)."""
REALTIME_FIELDS = frozenset(
    {"audio", "video", "text", "activityStart", "activityEnd", "audioStreamEnd", "mediaChunks"}
)
UNKNOWN_FIELD = "serverHologram"
UNKNOWN_VALUE = {"note": "a field this client does not know"}
"""A top-level field of a server message that Gemini does not have, and what drift puts in it."""
CLIENT_FIELDS = frozenset({"setup", "clientContent", "realtimeInput", "toolResponse"})
"""The fields of a client message (``google-genai``'s ``LiveClientMessage``, camelCase)."""


class GeminiFakeSession(FakeSession):
    """A fake Gemini Live session."""

    DIALECT = "gemini"
    PATH = "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.set_up = False
        self.manual = False
        self.activity_open = False
        self.activity_start_s = 0.0
        self.declared_rate: int | None = None
        self.explicit_vad = False

    async def opened(self) -> None:
        """Nothing: the client speaks first (``setup``)."""

    async def on_message(self, message: dict[str, Any]) -> None:
        """One client message: exactly one known field, ``setup`` first."""
        fields = sorted(message)
        if len(fields) != 1 or fields[0] not in CLIENT_FIELDS:
            await self.reject(f"a client message has exactly one of {sorted(CLIENT_FIELDS)}")
            return
        field, body = fields[0], message[fields[0]]
        if not isinstance(body, dict):
            await self.reject(f"{field} must be an object")
            return
        if (field == "setup") == self.set_up:
            await self.reject("setup must be the first message, and only the first")
            return
        if field == "setup":
            await self.on_setup(body)
        elif field == "clientContent":
            await self.on_client_content(body)
        elif field == "realtimeInput":
            await self.on_realtime_input(body)

    async def on_setup(self, setup: dict[str, Any]) -> None:
        """Check the setup, configure activity detection, answer ``setupComplete``."""
        model = setup.get("model")
        if not isinstance(model, str) or not MODEL.fullmatch(model):
            await self.reject("setup.model must be 'models/...' or Vertex's '.../models/...'")
            return
        modalities = setup.get("generationConfig", {}).get("responseModalities")
        if modalities != ["AUDIO"]:
            await self.reject("generationConfig.responseModalities must be ['AUDIO']")
            return
        self.set_up = True
        self.record.settings = setup
        self.explicit_vad = setup.get("explicitVadSignal") is True
        realtime = setup.get("realtimeInputConfig", {})
        detection = realtime.get("automaticActivityDetection", {})
        self.manual = bool(detection.get("disabled", False))
        self.record.endpointing = not self.manual
        if not self.manual:
            self.configure_vad(
                float(detection.get("silenceDurationMs", DEFAULT_SILENCE_MS)),
                float(detection.get("prefixPaddingMs", WINDOW_MS)),
                0.0,
                SPEECH_RMS,
            )
        if self.behaviour.acknowledge:
            await self.send({"setupComplete": {"sessionId": self.record.session_id}})

    async def on_client_content(self, content: dict[str, Any]) -> None:
        """History turns: each ``{role: user|model, parts: [...]}``.

        A part is ``{text}`` or ``{inlineData: {mimeType: "audio/pcm;rate=N", data}}`` (base64
        PCM16 at that rate); each is kept, in order.
        """
        turns = content.get("turns", [])
        if not isinstance(turns, list):
            await self.reject("clientContent.turns must be a list")
            return
        for turn in turns:
            parts = turn.get("parts") if isinstance(turn, dict) else None
            if turn.get("role") not in ("user", "model") or not isinstance(parts, list):
                await self.reject("a turn needs role user|model and parts")
                return
            items = [self._history_part(str(turn["role"]), p) for p in parts]
            if not parts or any(item is None for item in items):
                await self.reject("history parts must be text or inlineData audio/pcm")
                return
            self.record.history.extend(item for item in items if item is not None)
            self.record.history_turns += 1

    @staticmethod
    def _history_part(role: str, part: Any) -> HistoryItem | None:
        if isinstance(part, dict) and isinstance(part.get("text"), str) and len(part) == 1:
            return HistoryItem(role, part["text"])
        blob = part.get("inlineData") if isinstance(part, dict) and len(part) == 1 else None
        mime = INPUT_MIME.fullmatch(str(blob.get("mimeType"))) if isinstance(blob, dict) else None
        if mime is None or not isinstance(blob, dict):
            return None
        data = str(blob.get("data", ""))
        if decode_pcm16(data) is None:
            return None
        return HistoryItem(role, "", base64.b64decode(data), int(mime.group(1)))

    async def on_realtime_input(self, body: dict[str, Any]) -> None:
        """Audio, or the manual activity markers."""
        fields = sorted(body)
        if len(fields) != 1 or fields[0] not in REALTIME_FIELDS:
            await self.reject(f"realtimeInput has exactly one of {sorted(REALTIME_FIELDS)}")
            return
        field = fields[0]
        if field == "audio":
            blob = body["audio"]
            mime = (
                INPUT_MIME.fullmatch(str(blob.get("mimeType"))) if isinstance(blob, dict) else None
            )
            if mime is None:
                await self.reject("realtimeInput.audio.mimeType must be audio/pcm;rate=N")
                return
            rate = int(mime.group(1))
            if self.declared_rate not in (None, rate):
                await self.reject("the input audio rate changed mid-session")
                return
            self.declared_rate = self.rate = rate
            samples = decode_pcm16(str(blob.get("data", "")))
            if samples is None:
                await self.reject("realtimeInput.audio.data must be base64 PCM16")
                return
            if self.manual and not self.activity_open:
                await self.reject("audio outside activityStart/activityEnd")
                return
            await self.audio(samples)
        elif field in ("activityStart", "activityEnd"):
            if not self.manual:
                await self.reject(f"{field} needs automatic activity detection disabled")
                return
            if field == "activityStart":
                self.activity_open = True
                self.activity_start_s = self.stream_s()
                await self._speech_started()
            else:
                self.activity_open = False
                now = self.stream_s()
                self.request_answer("activity_end", now, now)

    async def send_speech(self, event: VadEvent) -> None:
        """``voiceActivity`` where the setup asked for it; otherwise nothing (Gemini's default)."""
        if not self.explicit_vad:
            return
        kind = "ACTIVITY_START" if event.change is Change.STARTED else "ACTIVITY_END"
        at_s = self._vad_origin_s + event.at / self.rate
        offset = f"{at_s:.3f}s"  # a protobuf Duration, as JSON writes one
        await self.send({"voiceActivity": {"voiceActivityType": kind, "audioOffset": offset}})

    async def send_answer_start(self, answer: AnswerRecord, answer_id: str) -> None:
        """Nothing: audio parts simply start coming."""

    async def send_answer_piece(self, answer_id: str, audio: str | None, text: str) -> None:
        """The delta as two ``inlineData`` parts of one message, split at an odd byte."""
        if audio is not None:
            raw = base64.b64decode(audio)
            cut = (len(raw) // 2) | 1
            parts = [
                {"inlineData": {"mimeType": OUTPUT_MIME, "data": b64(piece)}}
                for piece in (raw[:cut], raw[cut:])
                if piece
            ]
            await self.send({"serverContent": {"modelTurn": {"parts": parts}}})
        if text:
            await self.send({"serverContent": {"outputTranscription": {"text": text}}})

    async def send_answer_end(self, answer: AnswerRecord, answer_id: str) -> None:
        """``generationComplete`` then ``turnComplete`` (nothing more after an interruption)."""
        if answer.cancelled:
            return
        await self.send({"serverContent": {"generationComplete": True}})
        await self.send({"serverContent": {"turnComplete": True}})

    async def send_barge_in(self) -> None:
        """``serverContent.interrupted``."""
        await self.send({"serverContent": {"interrupted": True}})

    def error_event(self, code: str, message: str) -> None:
        """None: Gemini closes the socket instead."""
        return None

    def unknown_event(self) -> dict[str, Any]:
        """A field Gemini does not have."""
        return {UNKNOWN_FIELD: {"depth": 3}}

    def rate_limit_event(self) -> None:
        """None: Gemini closes the socket with 1013 ("try again later") instead."""
        return None

    async def go_away(self) -> None:
        """``goAway`` with no time left, then a close with 1001 ("going away")."""
        await self.send({"goAway": {"timeLeft": "0s"}})
        await self.close(1001, "injected push-back: the server is going away")

    async def send(self, message: dict[str, Any]) -> None:
        """Send one server message, with a field Gemini does not have under drift."""
        if not self.behaviour.unknown_every or UNKNOWN_FIELD in message:
            await super().send(message)
            return
        await super().send({**message, UNKNOWN_FIELD: UNKNOWN_VALUE})
        self.record.unknown_sent += 1
