"""Fake OpenAI Realtime servers (GA, and the beta names of the deltas).

docs/wire-formats.md section 6. The session is
``session.update{session:{type:"realtime", audio:{input:{format, turn_detection}, ...}}}``. Every
client event is checked against the dialect; anything else is answered with an ``error`` event
and recorded as a violation. xAI speaks the same events (module :mod:`._xai`).
"""

from __future__ import annotations

import base64
import itertools
from typing import Any, ClassVar

from pmc.testing.hosted._behaviour import AnswerRecord, HistoryItem
from pmc.testing.hosted._endpointer import THRESHOLD_TO_RMS, WINDOW_MS, Change, VadEvent
from pmc.testing.hosted._pcm import OUTPUT_RATE, decode_pcm16
from pmc.testing.hosted._session import FakeSession

SEMANTIC_TIMEOUT_MS = {"low": 8000, "medium": 4000, "high": 2000, "auto": 4000}
"""Semantic VAD modelled as its longest wait by eagerness (developers.openai.com realtime-vad
guide: low, medium and high wait at most 8, 4 and 2 s; auto is medium)."""
SERVER_VAD_DEFAULTS = {"threshold": 0.5, "prefix_padding_ms": 300, "silence_duration_ms": 500}
"""The API's server VAD defaults (the ``openai`` package's ``ServerVad`` field docs)."""
MIN_COMMIT_MS = 100
"""A commit of less audio is refused: "buffer too small. Expected at least 100ms of audio"."""
CLIENT_EVENTS = frozenset(
    """
    session.update input_audio_buffer.append input_audio_buffer.commit input_audio_buffer.clear
    conversation.item.create conversation.item.truncate conversation.item.delete
    conversation.item.retrieve response.create response.cancel output_audio_buffer.clear
    """.split()
)
"""Every client event of the GA API (the ``openai`` package's ``RealtimeClientEvent``)."""


class OpenAIFakeSession(FakeSession):
    """A fake GPT Realtime session (GA events; ``beta`` sends the beta names of deltas)."""

    DIALECT = "openai"
    PATH = "/v1/realtime?model=gpt-realtime"
    BETA: ClassVar[bool] = False

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.ids = itertools.count(1)
        self.buffered = 0
        """Input samples appended since the last commit."""
        self.commit_s: float | None = None
        self.committed = True
        self.interrupt_response = True

    def event_id(self) -> str:
        """A server event id."""
        return f"event_{next(self.ids)}"

    async def event(self, kind: str, **fields: Any) -> None:
        """Send a server event of type ``kind``."""
        await self.send({"type": kind, "event_id": self.event_id(), **fields})

    async def opened(self) -> None:
        """``session.created`` first."""
        session = {"id": self.record.session_id, "object": "realtime.session", "type": "realtime"}
        await self.send(
            {"type": "session.created", "event_id": self.event_id(), "session": session}
        )

    # -- client events ----------------------------------------------------------------------

    async def on_message(self, message: dict[str, Any]) -> None:
        """Dispatch one client event after checking it belongs to the dialect."""
        kind = message.get("type")
        if kind not in CLIENT_EVENTS:
            await self.reject(f"unknown client event {kind!r}")
            return
        handler = getattr(self, "on_" + str(kind).replace(".", "_"), None)
        if handler is None:
            return  # a known event the fake has no use for
        await handler(message)

    async def on_session_update(self, message: dict[str, Any]) -> None:
        """Check the session shape, configure the endpointer, acknowledge."""
        session = message.get("session")
        if not isinstance(session, dict):
            await self.reject("session.update needs a session object")
            return
        problem = self.check_session(session)
        if problem:
            await self.reject(problem)
            return
        self.record.settings = session
        self.apply_turn_detection(self.turn_detection_of(session))
        if self.behaviour.acknowledge:
            updated = {"id": self.record.session_id, **session}
            await self.send(
                {"type": "session.updated", "event_id": self.event_id(), "session": updated}
            )

    def check_session(self, session: dict[str, Any]) -> str | None:
        """What is wrong with a GA session, if anything."""
        if session.get("type") != "realtime":
            return "session.type must be 'realtime'"
        audio = session.get("audio", {})
        if not isinstance(audio, dict):
            return "session.audio must be an object"
        if not self.behaviour.server_vad and audio.get("input", {}).get("turn_detection"):
            return "no turn detection here: session.audio.input.turn_detection must be null"
        for side in ("input", "output"):
            fmt = audio.get(side, {}).get("format")
            if fmt is not None and fmt != {"type": "audio/pcm", "rate": OUTPUT_RATE}:
                return f"session.audio.{side}.format: only 24 kHz audio/pcm is supported"
        return None

    def turn_detection_of(self, session: dict[str, Any]) -> dict[str, Any] | None:
        """The session's turn detection (GA: under audio.input)."""
        default = {"type": "server_vad"} if self.behaviour.server_vad else None
        detection: dict[str, Any] | None = (
            session.get("audio", {}).get("input", {}).get("turn_detection", default)
        )
        return detection

    def apply_turn_detection(self, detection: dict[str, Any] | None) -> None:
        """Server VAD, semantic VAD as its longest wait, or nothing."""
        self.vad_off()
        if detection is None or detection.get("type") is None:
            return
        self.create_response = bool(detection.get("create_response", True))
        self.interrupt_response = bool(detection.get("interrupt_response", True))
        if detection["type"] == "semantic_vad":
            silence = SEMANTIC_TIMEOUT_MS[str(detection.get("eagerness", "auto"))]
            rms = SERVER_VAD_DEFAULTS["threshold"] * THRESHOLD_TO_RMS
            self.configure_vad(silence, WINDOW_MS, 0, rms)
            return
        settings = {**SERVER_VAD_DEFAULTS, **detection}
        self.configure_vad(
            float(settings["silence_duration_ms"]),
            WINDOW_MS,
            float(settings["prefix_padding_ms"]),
            float(settings["threshold"]) * THRESHOLD_TO_RMS,
        )

    async def on_conversation_item_create(self, message: dict[str, Any]) -> None:
        """A history message: check its shape, keep it, acknowledge it."""
        item = message.get("item")
        problem = self.check_item(item)
        if problem:
            await self.reject(problem)
            return
        assert isinstance(item, dict)
        for part in item["content"]:
            audio = part.get("audio")
            pcm = base64.b64decode(audio) if isinstance(audio, str) else b""
            text = str(part.get("text", part.get("transcript", "")) or "")
            self.record.history.append(
                HistoryItem(str(item["role"]), text, pcm, OUTPUT_RATE if pcm else 0)
            )
        self.record.history_turns += 1
        added = {**item, "id": f"item_h{self.record.history_turns}", "status": "completed"}
        for kind in ("conversation.item.added", "conversation.item.done"):
            await self.send({"type": kind, "event_id": self.event_id(), "item": added})

    def check_item(self, item: Any) -> str | None:
        """What is wrong with a history message item, if anything (GA content types).

        Text parts carry ``text``; audio parts (``input_audio``, ``output_audio``) carry base64
        PCM16 at the session's 24 kHz and may carry a ``transcript``.
        """
        if not isinstance(item, dict) or item.get("type") != "message":
            return "conversation.item.create needs a message item"
        role, content = item.get("role"), item.get("content")
        wanted = {
            "user": ("input_text", "input_audio"),
            "system": ("input_text",),
            "assistant": ("output_text", "output_audio"),
        }
        if role not in wanted or not isinstance(content, list) or not content:
            return "a message item needs a role and content"
        for part in content:
            kinds = wanted[str(role)]
            if not isinstance(part, dict) or part.get("type") not in kinds:
                return f"{role} content must be {' or '.join(kinds)} parts"
            if str(part["type"]).endswith("_text"):
                if not isinstance(part.get("text"), str):
                    return "a text part needs text"
            elif decode_pcm16(str(part.get("audio", ""))) is None:
                return f"a {part['type']} part needs base64 PCM16 audio"
            elif not isinstance(part.get("transcript", ""), str):
                return "an audio part's transcript is text"
        return None

    async def on_input_audio_buffer_append(self, message: dict[str, Any]) -> None:
        """Live audio."""
        samples = decode_pcm16(str(message.get("audio", "")))
        if samples is None:
            await self.reject("input_audio_buffer.append: audio must be base64 PCM16")
            return
        self.buffered += len(samples)
        self.committed = False
        await self.audio(samples)

    async def on_input_audio_buffer_commit(self, message: dict[str, Any]) -> None:
        """Commit the buffer (refused under 100 ms of audio).

        Where the server needs ``final`` (vLLM-Omni's turn-based handler), a final commit is
        answered without ``response.create``.
        """
        final = message.get("final") is True
        if self.behaviour.commit_needs_final and not final:
            await self.reject("input_audio_buffer.commit needs final: true")
            return
        if self.buffered * 1000 < MIN_COMMIT_MS * self.rate:
            await self.reject(
                "buffer too small. Expected at least 100ms of audio",
                "input_audio_buffer_commit_empty",
            )
            return
        self.buffered = 0
        self.commit_s = self.stream_s()
        await self.acknowledge_commit()
        if self.behaviour.commit_needs_final:
            self.request_answer("commit", self.commit_s, self.commit_s, text_only=False)

    async def acknowledge_commit(self) -> None:
        """``input_audio_buffer.committed`` (OpenAI: at once)."""
        self.committed = True
        self.record.committed_sent.append(round(self.stream_s(), 6))
        await self.send(
            {"type": "input_audio_buffer.committed", "event_id": self.event_id(), "item_id": "i"}
        )

    async def on_input_audio_buffer_clear(self, message: dict[str, Any]) -> None:
        """Forget the uncommitted buffer."""
        self.buffered = 0
        await self.send({"type": "input_audio_buffer.cleared", "event_id": self.event_id()})

    async def on_response_create(self, message: dict[str, Any]) -> None:
        """Answer the committed turn."""
        now = self.stream_s()
        turn_end = self.commit_s if self.commit_s is not None else now
        self.request_answer("commit", turn_end, now, text_only=not self.committed)

    async def on_response_cancel(self, message: dict[str, Any]) -> None:
        """Stop the answer being sent."""
        if self.answer is not None and self.answer.stopped_s is None:
            self.answer.stopped_s = round(self.stream_s(), 6)
            self.answer.cancelled = True

    async def on_conversation_item_truncate(self, message: dict[str, Any]) -> None:
        """The client stopped playing an item; check the event, acknowledge it."""
        ok = (
            isinstance(message.get("item_id"), str)
            and isinstance(message.get("content_index"), int)
            and isinstance(message.get("audio_end_ms"), int)
        )
        if not ok:
            await self.reject(
                "conversation.item.truncate needs item_id, content_index, audio_end_ms"
            )
            return
        await self.send(
            {
                "type": "conversation.item.truncated",
                "event_id": self.event_id(),
                "item_id": message["item_id"],
                "content_index": message["content_index"],
                "audio_end_ms": message["audio_end_ms"],
            }
        )

    # -- server events ----------------------------------------------------------------------

    async def send_speech(self, event: VadEvent) -> None:
        """``speech_started``/``speech_stopped`` (and the automatic commit after a stop)."""
        ms = event.at * 1000 // self.rate
        if event.change is Change.STARTED:
            await self.send(
                {
                    "type": "input_audio_buffer.speech_started",
                    "event_id": self.event_id(),
                    "audio_start_ms": ms,
                    "item_id": "i",
                }
            )
            return
        await self.send(
            {
                "type": "input_audio_buffer.speech_stopped",
                "event_id": self.event_id(),
                "audio_end_ms": ms,
                "item_id": "i",
            }
        )
        self.buffered = 0
        await self.acknowledge_commit()

    def delta_name(self, ga: str, beta: str) -> str:
        """A delta event's GA name, or its beta alias when the fake speaks beta."""
        return beta if self.BETA else ga

    async def send_answer_start(self, answer: AnswerRecord, answer_id: str) -> None:
        """``response.created`` and the output item."""
        response = {"id": answer_id, "object": "realtime.response", "status": "in_progress"}
        await self.send(
            {"type": "response.created", "event_id": self.event_id(), "response": response}
        )
        if self.behaviour.unknown_every:
            await self.send_unknown(response_id=answer_id)
        item = {"id": f"{answer_id}_item", "type": "message", "role": "assistant"}
        await self.send(
            {
                "type": "response.output_item.added",
                "event_id": self.event_id(),
                "response_id": answer_id,
                "output_index": 0,
                "item": item,
            }
        )

    async def send_answer_piece(self, answer_id: str, audio: str | None, text: str) -> None:
        """An audio delta and its transcript delta (text deltas only for a text answer)."""
        ids = {
            "event_id": "",
            "response_id": answer_id,
            "item_id": f"{answer_id}_item",
            "output_index": 0,
            "content_index": 0,
        }
        if audio is not None:
            name = self.delta_name("response.output_audio.delta", "response.audio.delta")
            await self.send({**ids, "type": name, "event_id": self.event_id(), "delta": audio})
            name = self.delta_name(
                "response.output_audio_transcript.delta", "response.audio_transcript.delta"
            )
        else:
            name = self.delta_name("response.output_text.delta", "response.text.delta")
        if text:
            await self.send({**ids, "type": name, "event_id": self.event_id(), "delta": text})

    async def send_answer_end(self, answer: AnswerRecord, answer_id: str) -> None:
        """``response.done`` with ``completed`` or ``cancelled``."""
        status = "cancelled" if answer.cancelled else "completed"
        response = {"id": answer_id, "object": "realtime.response", "status": status}
        await self.send(
            {"type": "response.done", "event_id": self.event_id(), "response": response}
        )

    async def send_barge_in(self) -> None:
        """Nothing more: ``speech_started`` is the client's cue (interrupt_response cancels)."""

    async def _speech_started(self) -> None:
        if self.interrupt_response:
            await super()._speech_started()

    def error_event(self, code: str, message: str) -> dict[str, Any]:
        """The ``error`` event."""
        error = {"type": "invalid_request_error", "code": code, "message": message}
        return {"type": "error", "event_id": self.event_id(), "error": error}

    def unknown_event(self) -> dict[str, Any]:
        """An event type OpenAI does not have."""
        return {"type": "response.hologram.delta", "event_id": self.event_id(), "delta": ""}

    async def go_away(self) -> None:
        """Nothing: the API has no warning before it ends a session."""

    def rate_limit_event(self) -> dict[str, Any]:
        """The ``error`` event of a rate limit, in the API's error shape."""
        error = {
            "type": "rate_limit_error",
            "code": "rate_limit_exceeded",
            "message": self.rate_limit_message(),
            "param": None,
            "event_id": None,
        }
        return {"type": "error", "event_id": self.event_id(), "error": error}


class OpenAIBetaFakeSession(OpenAIFakeSession):
    """The same, sending the beta names of the audio and text deltas."""

    BETA = True
