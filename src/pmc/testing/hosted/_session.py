"""One fake hosted session: the stream clock, the endpointer, answers, barge-in and faults.

Each dialect subclasses :class:`FakeSession` with its message vocabulary; this module keeps the
clock, the endpointer, the answer streaming and the faults identical across dialects.

The stream clock of a session: the ``k``-th input sample received is at ``k / rate`` seconds.
A client sends each frame when its last sample has been spoken, never earlier, so a frame whose
last sample is ``k`` arriving at ``a`` says the stream began no later than ``a - k / rate``; the
earliest such origin over the frames received is the stream's origin on the fake's own clock
(a frame sent late only makes its own estimate later). An answer due at stream time ``t`` is sent
at ``origin + t``, so a late input frame does not delay it, as it would not delay a real server
whose clock keeps running. The origin is later than the client's by the least delay any frame
took to arrive (loopback and parsing, well under a millisecond on an idle machine), and an
answer reaches the client that much plus its own delay after the fake sent it: so where the
client plays an answer's first sample on its stream clock is where the fake recorded sending it
(:attr:`AnswerRecord.onset_s`), within about a millisecond.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Coroutine
from typing import Any, ClassVar, NoReturn

import numpy as np
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from pmc.audio import FloatArray
from pmc.clock import NS_PER_S
from pmc.testing.hosted._behaviour import (
    LEAD_IN_RATE,
    AnswerRecord,
    FakeBehaviour,
    SessionRecord,
)
from pmc.testing.hosted._deadline import sleep_until
from pmc.testing.hosted._endpointer import Change, EnergyEndpointer, VadEvent
from pmc.testing.hosted._pcm import OUTPUT_RATE
from pmc.testing.hosted._voice import answer_audio, b64, pcm_deltas


class _Closed(Exception):
    """The fake dropped the connection on purpose."""


class FakeSession(ABC):
    """One connection to a fake hosted server.

    Subclasses say what the client's messages mean (:meth:`on_message`) and how the server says
    things (the ``send_*`` hooks). This class reads input audio, runs the endpointer, streams
    answers at their due time, handles barge-in and injects the faults.
    """

    DIALECT: ClassVar[str]
    INPUT_RATE: ClassVar[int] = 24_000
    """The input rate until the client says another (Gemini's mimeType may)."""
    PATH: ClassVar[str]
    """The path the real API serves (the fake's URL has it too)."""

    def __init__(
        self, ws: ServerConnection, behaviour: FakeBehaviour, record: SessionRecord
    ) -> None:
        self.ws = ws
        self.behaviour = behaviour
        self.record = record
        self.rate = self.INPUT_RATE
        """Input samples per second."""
        self.samples = 0
        """Input samples received."""
        self._vad: tuple[float, float, float, float] | None = None
        self.origin_ns: int | None = None
        """The stream's origin on the fake's clock (see the module's docstring)."""
        self.endpointer: EnergyEndpointer | None = None
        self._vad_origin_s = 0.0
        """Where the endpointer's sample 0 lies on the stream clock (it may start mid-session)."""
        self._recent = np.zeros(0, dtype=np.float32)
        """The endpointer's latest input samples, to place a barge-in's first sample."""
        self.create_response = True
        self.answer: AnswerRecord | None = None
        """The latest answer (scheduled, being sent, or playing at the client)."""
        self._sending: AnswerRecord | None = None
        """The answer whose deltas are being sent (or are due to be)."""
        self._tasks: set[asyncio.Task[None]] = set()
        self._awake = asyncio.Event()
        self._awake.set()
        self._answer_ids = itertools.count(1)
        self._draws = random.Random(f"{behaviour.seed}:{record.session_id}")
        """Each answer's jitter and lead-in (a string seed hashes the same in every process)."""

    # -- the dialect ------------------------------------------------------------------------

    @abstractmethod
    async def opened(self) -> None:
        """What the server says as soon as the socket opens (if anything)."""

    @abstractmethod
    async def on_message(self, message: dict[str, Any]) -> None:
        """Handle one well-formed JSON object from the client (validate it first)."""

    @abstractmethod
    async def send_speech(self, event: VadEvent) -> None:
        """Tell the client the endpointer's decision, as the dialect does (or not)."""

    @abstractmethod
    async def send_answer_start(self, answer: AnswerRecord, answer_id: str) -> None:
        """An answer begins."""

    @abstractmethod
    async def send_answer_piece(self, answer_id: str, audio: str | None, text: str) -> None:
        """One delta of an answer: base64 audio (None for a text-only answer) and its words."""

    @abstractmethod
    async def send_answer_end(self, answer: AnswerRecord, answer_id: str) -> None:
        """An answer is complete, or was cancelled."""

    @abstractmethod
    async def send_barge_in(self) -> None:
        """Tell the client its answer was interrupted, where the dialect has such a message."""

    @abstractmethod
    def error_event(self, code: str, message: str) -> dict[str, Any] | None:
        """The dialect's error event (None: it reports errors by closing the socket)."""

    @abstractmethod
    def unknown_event(self) -> dict[str, Any]:
        """A message the dialect does not have."""

    @abstractmethod
    def rate_limit_event(self) -> dict[str, Any] | None:
        """The dialect's rate-limit error event (None: it closes the socket with 1013)."""

    @abstractmethod
    async def go_away(self) -> None:
        """Warn the client the session is ending, then end it, where the dialect can."""

    # -- helpers for dialects ---------------------------------------------------------------

    async def send(self, message: dict[str, Any]) -> None:
        """Send one server message (nothing while stalled)."""
        await self._awake.wait()
        await self.ws.send(json.dumps(message, separators=(",", ":")))

    def rate_limit_message(self) -> str:
        """What a rate limit says: like OpenAI's message, how long to wait (``retry_after_s``)."""
        wait = self.behaviour.retry_after
        return f"Rate limit reached (injected push-back). Please try again in {wait}s."

    async def send_unknown(self, **fields: Any) -> None:
        """Send the dialect's unknown event (with ``fields`` added) and count it."""
        await self.send({**self.unknown_event(), **fields})
        self.record.unknown_sent += 1

    async def reject(self, problem: str, code: str = "invalid_request_error") -> None:
        """Record a malformed client message and answer it with an error (or a close)."""
        self.record.violations.append(problem)
        event = self.error_event(code, problem)
        if event is None:
            await self.close(1007, problem[:120])
        await self.send(event)

    async def close(self, code: int, reason: str) -> NoReturn:
        """Close the socket with ``code`` and end the session."""
        await self.ws.close(code, reason)
        raise _Closed

    def configure_vad(
        self, silence_ms: float, min_speech_ms: float, padding_ms: float, rms: float
    ) -> None:
        """Turn the endpointer on with these settings (it starts with the first audio)."""
        self.record.endpointing = True
        self._vad = (silence_ms, min_speech_ms, padding_ms, rms)

    def vad_off(self) -> None:
        """Turn the endpointer off."""
        self.record.endpointing = False
        self._vad = None
        self.endpointer = None

    def stream_s(self, now_ns: int | None = None) -> float:
        """The session's stream clock now (seconds; before any audio, the samples so far)."""
        if self.origin_ns is None:
            return self.samples / self.rate
        now = time.monotonic_ns() if now_ns is None else now_ns
        return (now - self.origin_ns) / NS_PER_S

    def _wall_ns(self, stream_s: float) -> int:
        """The fake's clock instant of stream time ``stream_s``."""
        origin = self.origin_ns if self.origin_ns is not None else time.monotonic_ns()
        return origin + round(stream_s * NS_PER_S)

    async def audio(self, samples: FloatArray) -> None:
        """Live input: advance the stream clock and let the endpointer decide."""
        arrival = time.monotonic_ns()
        self.record.chunks += 1
        self.samples += len(samples)
        origin = arrival - self.samples * NS_PER_S // self.rate
        self.origin_ns = origin if self.origin_ns is None else min(self.origin_ns, origin)
        self.record.origin_ns = self.origin_ns
        self.record.audio_s = self.samples / self.rate
        if self.endpointer is None and self._vad is not None:
            self.endpointer = EnergyEndpointer(self.rate, *self._vad)
            # Turned on mid-session (after an end of input), it counts from this chunk, which
            # need not follow the last one.
            self._vad_origin_s = self.stream_s(arrival) - len(samples) / self.rate
            self.record.vad_on = (self.record.chunks, arrival)
            self._recent = np.zeros(0, dtype=np.float32)
        if self.endpointer is None:
            return
        first = self.endpointer.received
        # Back to the window before a run of speech the endpointer may need to count as started
        # (Gemini's prefix padding), so that a barge-in's first sample is still here.
        keep = (self.endpointer.min_windows + 2) * self.endpointer.window
        self._recent = np.concatenate([self._recent, samples])[-(keep + len(samples)) :]
        for event in self.endpointer.push(samples):
            at_s = self._vad_origin_s + event.at / self.rate
            self.record.speech.append((event.change.value, round(at_s, 6)))
            delay_s = self.behaviour.barge_in_delay_ms / 1000
            if event.change is Change.STARTED and delay_s and self._playing():
                heard = self._first_sample_s(event, first + len(samples))
                self.spawn(self._barge_in_at(heard, delay_s, event))
                continue
            if event.change is Change.STARTED:
                await self._speech_started()
            self.record.speech_sent.append((event.change.value, round(self.stream_s(), 6)))
            await self.send_speech(event)
            if event.change is Change.STARTED:
                self._stop_sent()
            if event.change is Change.STOPPED and self.create_response:
                self.request_answer("vad", at_s, self._vad_origin_s + event.decided / self.rate)

    def _playing(self) -> bool:
        """Whether an answer is still playing at the client."""
        answer = self.answer
        if answer is None or answer.stopped_s is not None or answer.cancelled:
            return False
        return answer.onset_s is None or self.stream_s() < answer.onset_s + answer.audio_s

    def _first_sample_s(self, event: VadEvent, received: int) -> float:
        """Where the speech that started ``event`` begins: its first non-zero sample.

        The endpointer decides on 20 ms windows (and reports the start less its padding); the
        silence it was sent before is exact zeros, so the speech's first sample is exact.
        """
        assert self.endpointer is not None
        base = received - len(self._recent)  # endpointer index of self._recent[0]
        lo = max(event.at + self.endpointer.padding - self.endpointer.window, base)
        loud = np.flatnonzero(np.abs(self._recent[lo - base :]) > 0)
        index = lo + int(loud[0]) if loud.size else event.at + self.endpointer.padding
        return self._vad_origin_s + index / self.rate

    async def _barge_in_at(self, heard_s: float, delay_s: float, event: VadEvent) -> None:
        """Say speech started, and stop the answer, ``delay_s`` after the speech began."""
        if self.answer is not None:
            self.answer.heard_s = round(heard_s, 6)
        await sleep_until(self._wall_ns(heard_s + delay_s))
        await self._speech_started()
        await self.send_speech(event)
        self._stop_sent()

    def _stop_sent(self) -> None:
        """Stamp when the client had every message that tells it to stop the answer.

        The cue is the dialect's barge-in message or its ``speech_started``, sent after it.
        """
        answer = self.answer
        if answer is not None and answer.stopped_s is not None and answer.stop_sent_s is None:
            answer.stop_sent_s = round(self.stream_s(), 6)

    async def _speech_started(self) -> None:
        """Speech over an answer that is still playing at the client stops it (barge-in)."""
        answer = self.answer
        if answer is None or not self.behaviour.barge_in or answer.stopped_s is not None:
            return
        now = self.stream_s()
        if answer.onset_s is not None and now >= answer.onset_s + answer.audio_s:
            return  # it had played out
        answer.stopped_s = round(now, 6)
        answer.cancelled = answer.onset_s is None or self._sending is answer
        await self.send_barge_in()

    def request_answer(
        self, trigger: str, turn_end_s: float, requested_s: float, text_only: bool = False
    ) -> None:
        """Schedule an answer ``latency_ms`` after the turn's end (never before the request).

        The behaviour's jitter delays it further, and its lead-in opens it with silence.
        """
        if self._sending is not None and not self._sending.cancelled:
            return  # one answer at a time
        behaviour = self.behaviour
        jitter = self._draws.uniform(0, behaviour.jitter_ms / 1000) if behaviour.jitter_ms else 0.0
        most = round(behaviour.lead_in_ms * LEAD_IN_RATE / 1000)
        lead_in = self._draws.randint(0, most) / LEAD_IN_RATE if most else 0.0
        target = max(turn_end_s + behaviour.latency_ms / 1000, requested_s) + jitter
        answer = AnswerRecord(
            trigger,
            round(turn_end_s, 6),
            round(requested_s, 6),
            round(target, 6),
            text_only=text_only,
            jitter_s=round(jitter, 6),
            lead_in_s=lead_in,
        )
        self.answer = answer
        self.record.answers.append(answer)
        self._sending = answer
        self.spawn(self._stream(answer))

    async def _stream(self, answer: AnswerRecord) -> None:
        """Send the answer from its due time on, faster than real time, unless cancelled."""
        try:
            await sleep_until(self._wall_ns(answer.target_s))
            if answer.cancelled:
                return
            answer_id = f"{self.record.session_id}_answer_{next(self._answer_ids)}"
            audio = answer_audio(self.behaviour.reply_text)
            lead_in = round(answer.lead_in_s * OUTPUT_RATE)
            if lead_in:
                audio = np.concatenate([np.zeros(lead_in, dtype=np.float32), audio])
            deltas = pcm_deltas(audio, self.behaviour.delta_bytes)
            words = self.behaviour.reply_text.split()
            answer.audio_s = 0.0 if answer.text_only else len(audio) / OUTPUT_RATE
            await self.send_answer_start(answer, answer_id)
            await self._awake.wait()
            start_ns = time.monotonic_ns()  # the first audio delta goes out now
            answer.onset_s = round(self.stream_s(start_ns), 6)
            sent_bytes = 0
            for i, delta in enumerate(deltas):
                if _cancelled(answer):  # a barge-in while it was being sent
                    break
                due = start_ns + round(sent_bytes / 2 / OUTPUT_RATE / self.behaviour.speedup * 1e9)
                await sleep_until(due)
                piece = words[i * len(words) // len(deltas) : (i + 1) * len(words) // len(deltas)]
                text = "".join(f"{w} " for w in piece)
                await self.send_answer_piece(
                    answer_id, None if answer.text_only else b64(delta), text
                )
                if not i:
                    answer.onset_sent_s = round(self.stream_s(), 6)
                sent_bytes += len(delta)
            await self.send_answer_end(answer, answer_id)
        finally:
            if self._sending is answer:
                self._sending = None

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` beside the session; closing the session cancels it."""
        task = asyncio.get_running_loop().create_task(_quiet(work))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- the session ------------------------------------------------------------------------

    async def run(self) -> None:
        """Read client messages until the client goes, injecting the configured faults."""
        try:
            await self.opened()
            async for raw in self.ws:
                if self.record.messages is not None and isinstance(raw, str):
                    self.record.messages.append(raw)
                await self._receive(raw)
                await self._faults(len(self.record.received), self.record.received[-1])
        except (ConnectionClosed, _Closed):
            pass
        finally:
            for task in list(self._tasks):
                task.cancel()

    async def _receive(self, raw: str | bytes) -> None:
        if isinstance(raw, bytes):
            self.record.received.append("<binary>")
            await self.reject("binary message: this API takes JSON text")
            return
        try:
            message = json.loads(raw)
        except json.JSONDecodeError as exc:
            self.record.received.append("<malformed>")
            await self.reject(f"malformed JSON ({exc})")
            return
        if not isinstance(message, dict):
            self.record.received.append("<not an object>")
            await self.reject("a client message must be a JSON object")
            return
        label = message.get("type")
        self.record.received.append(label if isinstance(label, str) else ",".join(sorted(message)))
        await self.on_message(message)

    async def _faults(self, count: int, label: str) -> None:
        behaviour = self.behaviour
        if count == behaviour.error_after:
            event = self.error_event(
                behaviour.error_code, "injected fault: the server had an error"
            )
            if event is None:
                await self.close(1011, "injected fault: the server had an error")
            await self.send(event)
        if count == behaviour.malformed_after:
            await self.ws.send('{"type": "response.output_audio.delta", "delta": ')
        if count == behaviour.unknown_after:
            await self.send_unknown()
        if count == behaviour.rate_limit_after:
            event = self.rate_limit_event()
            if event is None:
                await self.close(1013, self.rate_limit_message())
            await self.send(event)
        if count == behaviour.go_away_after:
            await self.go_away()
        if count == behaviour.close_after:
            self.ws.transport.abort()
            raise _Closed
        if count == behaviour.stall_after or label == behaviour.stall_on:
            self._awake.clear()
            await asyncio.sleep(behaviour.stall_s)
            self._awake.set()


def _cancelled(answer: AnswerRecord) -> bool:
    """Whether the answer was cancelled (read afresh: another task may have set it)."""
    return answer.cancelled


async def _quiet(work: Coroutine[Any, Any, None]) -> None:
    """Await ``work``; a client that went away is no error of the fake's."""
    with contextlib.suppress(ConnectionClosed, _Closed, asyncio.CancelledError):
        await work
