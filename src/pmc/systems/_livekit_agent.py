"""pmc's own LiveKit agent, for the bundled ``livekit-*`` cards (docs/wire-formats.md 11).

LiveKit's console runs this file (``python -m livekit.agents console FILE --connect-addr ...``);
pmc never imports it. LiveKit's own session decides the turn: Silero (its plugin, weights in its
wheel) and either the VAD rule or LiveKit's local turn detector (``v1-mini``, weights in
``livekit-local-inference``), with LiveKit's interruption by voice activity. What it says is the
endpointer cascade's reply, as pmc's ``smart-turn`` cards do: the turn transcribed by pmc's
recogniser, the cascade's choice of reply, spoken by the bundled voice. So the cards differ from
``smart-turn`` and the endpointers only in who decides the turn.

Settings come from the environment the card gives (``[params.env]``):
``PMC_LIVEKIT_TURN`` (``vad`` or ``turn-detector``), ``PMC_LIVEKIT_MIN_DELAY_S`` and
``PMC_LIVEKIT_MAX_DELAY_S`` (LiveKit's endpointing delays; its defaults where unset),
``PMC_LIVEKIT_REPLY_TEXT`` (the cascade's fallback reply). LiveKit's echo warm-up (3 s during
which a first reply cannot be interrupted) is off, and a barge-in stops the reply at once
(no pause-and-resume): a device with echo cancellation, judged by what it does.
"""

from __future__ import annotations

import asyncio
import json
import os
import struct
import sys
import time
from typing import Any

import numpy as np
from livekit import rtc
from livekit.agents import (
    DEFAULT_API_CONNECT_OPTIONS,
    NOT_GIVEN,
    Agent,
    AgentServer,
    AgentSession,
    APIConnectOptions,
    JobContext,
    LanguageCode,
    inference,
    llm,
    stt,
    tts,
)
from livekit.plugins import silero

from pmc.audio import SAMPLE_RATE, resample, to_pcm16
from pmc.systems._endpointer import REPLY_TEXT, reply_to, sentences, transcript, voiced, warm_asr

TURN = os.environ.get("PMC_LIVEKIT_TURN", "vad")
REPLY = os.environ.get("PMC_LIVEKIT_REPLY_TEXT", REPLY_TEXT)
UNHEARD = "hmm"
"""What the recogniser is said to have heard when it heard no words: LiveKit commits a turn only
on a transcript, and the cascade answers anything that is not a question with its fallback."""


class CascadeSTT(stt.STT):
    """pmc's recogniser on each utterance LiveKit's VAD cuts (non-streaming: LiveKit adapts it)."""

    def __init__(self) -> None:
        super().__init__(capabilities=stt.STTCapabilities(streaming=False, interim_results=False))

    async def _recognize_impl(
        self,
        buffer: Any,
        *,
        language: Any = NOT_GIVEN,
        conn_options: APIConnectOptions,
    ) -> stt.SpeechEvent:
        frame = rtc.combine_audio_frames(buffer)
        pcm = np.frombuffer(bytes(frame.data), dtype="<i2").astype(np.float32) / 32768.0
        audio = resample(pcm, frame.sample_rate, SAMPLE_RATE)
        text = await asyncio.to_thread(transcript, audio) or UNHEARD
        data = stt.SpeechData(language=LanguageCode("en"), text=text)
        return stt.SpeechEvent(type=stt.SpeechEventType.FINAL_TRANSCRIPT, alternatives=[data])


class CascadeLLM(llm.LLM):
    """The cascade's choice of reply to the last thing the user said."""

    def chat(
        self,
        *,
        chat_ctx: Any,
        tools: Any = None,
        conn_options: Any = DEFAULT_API_CONNECT_OPTIONS,
        **_: Any,
    ) -> llm.LLMStream:
        return _Reply(self, chat_ctx=chat_ctx, tools=tools or [], conn_options=conn_options)


class _Reply(llm.LLMStream):
    async def _run(self) -> None:
        said = ""
        for item in self._chat_ctx.items:
            if getattr(item, "role", None) == "user":
                said = getattr(item, "text_content", None) or said
        text = reply_to(said, [], REPLY)
        delta = llm.ChoiceDelta(role="assistant", content=text)
        self._event_ch.send_nowait(llm.ChatChunk(id="pmc-reply", delta=delta))


class BundledVoice(tts.TTS):
    """The bundled voice (Piper), at 24 kHz."""

    def __init__(self) -> None:
        capabilities = tts.TTSCapabilities(streaming=False)
        super().__init__(capabilities=capabilities, sample_rate=SAMPLE_RATE, num_channels=1)

    def synthesize(
        self, text: str, *, conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS
    ) -> tts.ChunkedStream:
        return _Voice(tts=self, input_text=text, conn_options=conn_options)


class _Voice(tts.ChunkedStream):
    async def _run(self, output_emitter: Any) -> None:
        audio = await asyncio.to_thread(voiced, self.input_text)
        output_emitter.initialize(
            request_id="pmc-voice", sample_rate=SAMPLE_RATE, num_channels=1, mime_type="audio/pcm"
        )
        output_emitter.push(to_pcm16(audio).astype("<i2").tobytes())
        output_emitter.flush()


def _turn_handling() -> dict[str, Any]:
    endpointing = {
        key: float(os.environ[name])
        for key, name in (
            ("min_delay", "PMC_LIVEKIT_MIN_DELAY_S"),
            ("max_delay", "PMC_LIVEKIT_MAX_DELAY_S"),
        )
        if name in os.environ
    }
    detection: Any = "vad" if TURN == "vad" else inference.TurnDetector(version="v1-mini")
    handling: dict[str, Any] = {
        "turn_detection": detection,
        "interruption": {"mode": "vad", "resume_false_interruption": False},
        "preemptive_generation": {"enabled": False},
    }
    if endpointing:
        handling["endpointing"] = endpointing
    return handling


def record_replies(path: str) -> None:
    """Append to ``path`` when each reply's first audio frame is written to the console socket.

    LiveKit's own ``started_speaking_at`` is taken on the session's thread when the frame is
    handed on; the console writes it from another thread's loop, later by that hop. This record
    (``PMC_LIVEKIT_RECORD``, for tests) is the moment the reply left the agent, taken just
    before the write: the system-wide monotonic clock's nanoseconds, which pmc's stamps read too
    (a wall-clock time, converted afterwards, drifted by more than a millisecond over a run),
    with the console address and this process's id, which together name the rollout: pmc's
    port is handed out again once a rollout is done, while its agent may still be shutting down
    (and writing).
    """
    from livekit.agents.voice import remote_session

    transport = remote_session.TcpSessionTransport
    handed_on = transport.send_message_threadsafe
    addr = sys.argv[sys.argv.index("--connect-addr") + 1] if "--connect-addr" in sys.argv else ""
    pid = os.getpid()  # the job runs in this process (the console's thread executor)
    starts = [True]  # the next audio frame starts a reply

    def send(self: Any, message: Any) -> None:
        kind = message.WhichOneof("message")
        if kind in ("audio_playback_flush", "audio_playback_clear"):
            starts[0] = True
        if kind != "audio_output" or not starts[0] or self._writer is None or self._loop is None:
            handed_on(self, message)
            return
        starts[0] = False
        data = message.SerializeToString()
        payload, writer = struct.pack(">I", len(data)) + data, self._writer

        def write() -> None:
            at = time.monotonic_ns()
            writer.write(payload)
            with open(path, "a", encoding="utf-8") as out:
                record = {"addr": addr, "pid": pid, "first_audio_written_ns": at}
                out.write(json.dumps(record) + "\n")

        self._loop.call_soon_threadsafe(write)

    transport.send_message_threadsafe = send


if os.environ.get("PMC_LIVEKIT_RECORD"):
    record_replies(os.environ["PMC_LIVEKIT_RECORD"])

server = AgentServer()


@server.rtc_session()
async def entrypoint(ctx: JobContext) -> None:
    """One session: the console's microphone in, its speaker out."""
    # The recogniser and the voice load before the first turn, not during it; the fallback
    # reply, said sentence by sentence (LiveKit voices each sentence apart), is voiced ahead.
    await asyncio.to_thread(warm_asr)
    for sentence in sentences(REPLY):
        await asyncio.to_thread(voiced, sentence)
    # LiveKit's turn detector needs at least 0.25 s of VAD silence; the plugin's default is 0.55.
    vad = silero.VAD.load(min_silence_duration=0.25 if TURN != "vad" else 0.55)
    session: AgentSession[Any] = AgentSession(
        stt=CascadeSTT(),
        llm=CascadeLLM(),
        tts=BundledVoice(),
        vad=vad,
        turn_handling=_turn_handling(),
        aec_warmup_duration=None,
        user_away_timeout=None,
    )
    await session.start(agent=Agent(instructions="Answer briefly."), room=ctx.room)
