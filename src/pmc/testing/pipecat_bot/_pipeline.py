"""One call's real Pipecat pipeline: Silero VAD, Smart Turn v3.2, a canned reply in Piper.

transport in -> VADProcessor -> UserTurnProcessor -> CannedReply -> PiperSpeech -> transport out,
at the wire's rate both ways (Pipecat's defaults resample and lose the end of each reply). The
canned reply stands in for an LLM: on the end of the caller's turn it says a fixed sentence.
Two serializers, one per route: Pipecat's Twilio one (8 kHz) with auto hang-up off (no
credentials, no REST call), and its protobuf one (16 kHz), each wrapped to log a reply's first
audio, each interruption (``clear``) and any audio of the cut reply after it, just before they
are sent.
"""

from __future__ import annotations

from typing import Any

from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3
from pipecat.audio.vad.silero import SileroVADAnalyzer
from pipecat.frames.frames import (
    Frame,
    InterruptionFrame,
    OutputAudioRawFrame,
    TextFrame,
    TTSAudioRawFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
    UserStoppedSpeakingFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.audio.vad_processor import VADProcessor
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.runner.utils import parse_telephony_websocket
from pipecat.serializers.base_serializer import FrameSerializer
from pipecat.serializers.protobuf import ProtobufFrameSerializer
from pipecat.serializers.twilio import TwilioFrameSerializer
from pipecat.transports.websocket.fastapi import FastAPIWebsocketParams, FastAPIWebsocketTransport
from pipecat.turns.user_start.vad_user_turn_start_strategy import VADUserTurnStartStrategy
from pipecat.turns.user_stop.turn_analyzer_user_turn_stop_strategy import (
    TurnAnalyzerUserTurnStopStrategy,
)
from pipecat.turns.user_turn_processor import UserTurnProcessor
from pipecat.turns.user_turn_strategies import UserTurnStrategies
from pipecat.workers.runner import WorkerRunner

from pmc.testing.pipecat_bot._log import BotEventKind, BotLog
from pmc.testing.pipecat_bot._reply import PROTOBUF_RATE, RATE, REPLY_TEXT


def piece_bytes(rate: int) -> int:
    """20 ms of 16-bit PCM at ``rate``: one ``TTSAudioRawFrame``."""
    return rate * 2 * 20 // 1000


class CallState:
    """What one call's processors share: its number, its stream sid, the log, a reply under way."""

    def __init__(self, log: BotLog, call: int, stream_sid: str) -> None:
        self.log = log
        self.call = call
        self.stream_sid = stream_sid
        self.reply_pending = False
        """A reply was voiced and its first audio has not left yet."""
        self.cleared = False
        """An interruption left, and no reply's audio since."""

    def write(self, event: BotEventKind) -> None:
        self.log.write(event, self.call, self.stream_sid)


def log_sent(state: CallState, frame: Frame) -> None:
    """Log a reply's first audio, an interruption, or audio of the reply it cut, as sent."""
    if isinstance(frame, InterruptionFrame):
        state.reply_pending = False  # what was queued is dropped
        state.cleared = True
        state.write(BotEventKind.CLEAR)
    elif isinstance(frame, OutputAudioRawFrame) and state.reply_pending:
        state.reply_pending = state.cleared = False
        state.write(BotEventKind.FIRST_AUDIO)
    elif isinstance(frame, OutputAudioRawFrame) and state.cleared:
        state.write(BotEventKind.AUDIO_AFTER_CLEAR)


class _LogsSent:
    """Logs each frame the serializer it is mixed into actually puts on the wire."""

    _state: CallState

    async def serialize(self, frame: Frame) -> str | bytes | None:
        payload: str | bytes | None = await super().serialize(frame)  # type: ignore[misc]
        if payload is not None:
            log_sent(self._state, frame)
        return payload


class LoggingTwilioSerializer(_LogsSent, TwilioFrameSerializer):
    """Pipecat's Twilio serializer, logging a reply's first ``media`` and every ``clear``."""

    def __init__(self, state: CallState, call_sid: str) -> None:
        params = TwilioFrameSerializer.InputParams(auto_hang_up=False)
        super().__init__(state.stream_sid, call_sid, params=params)
        self._state = state


class LoggingProtobufSerializer(_LogsSent, ProtobufFrameSerializer):
    """Pipecat's protobuf serializer, logging a reply's first audio and every interruption."""

    def __init__(self, state: CallState) -> None:
        super().__init__()
        self._state = state


class CannedReply(FrameProcessor):
    """Stands in for the LLM: at the end of each caller turn, one fixed sentence."""

    def __init__(self, text: str = REPLY_TEXT) -> None:
        super().__init__()
        self._text = text

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)
        if isinstance(frame, UserStoppedSpeakingFrame) and direction is FrameDirection.DOWNSTREAM:
            await self.push_frame(TextFrame(self._text))


class PiperSpeech(FrameProcessor):
    """Speaks each text as the canned reply's audio: started, 20 ms pieces at ``rate``, stopped."""

    def __init__(self, state: CallState, pcm: bytes, rate: int) -> None:
        super().__init__()
        self._state = state
        self._pcm = pcm
        self._rate = rate

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if not isinstance(frame, TextFrame):
            await self.push_frame(frame, direction)
            return
        self._state.reply_pending = True
        await self.push_frame(TTSStartedFrame())
        size = piece_bytes(self._rate)
        for at in range(0, len(self._pcm), size):
            piece = self._pcm[at : at + size]
            await self.push_frame(TTSAudioRawFrame(piece, sample_rate=self._rate, num_channels=1))
        await self.push_frame(TTSStoppedFrame())


async def run_twilio_call(websocket: Any, log: BotLog, call: int, pcm: bytes) -> None:
    """Serve one accepted Twilio Media Streams websocket (8 kHz) until the caller hangs up."""
    _, call_data = await parse_telephony_websocket(websocket)
    state = CallState(log, call, str(call_data["stream_id"]))
    state.write(BotEventKind.CALL_START)
    serializer = LoggingTwilioSerializer(state, str(call_data["call_id"]))
    await run_call(websocket, state, serializer, pcm, RATE)


async def run_protobuf_call(websocket: Any, log: BotLog, call: int, pcm: bytes) -> None:
    """Serve one accepted websocket of Pipecat's protobuf frames (16 kHz) until it closes."""
    state = CallState(log, call, f"ws-{call}")
    state.write(BotEventKind.CALL_START)
    await run_call(websocket, state, LoggingProtobufSerializer(state), pcm, PROTOBUF_RATE)


async def run_call(
    websocket: Any, state: CallState, serializer: FrameSerializer, pcm: bytes, rate: int
) -> None:
    """Run the call's pipeline over ``serializer`` at ``rate`` until the caller hangs up."""
    transport = FastAPIWebsocketTransport(
        websocket=websocket,
        params=FastAPIWebsocketParams(
            audio_in_enabled=True,
            audio_out_enabled=True,
            add_wav_header=False,
            serializer=serializer,
        ),
    )
    turns = UserTurnProcessor(
        user_turn_strategies=UserTurnStrategies(
            start=[VADUserTurnStartStrategy()],
            stop=[
                TurnAnalyzerUserTurnStopStrategy(
                    turn_analyzer=LocalSmartTurnAnalyzerV3(), wait_for_transcript=False
                )
            ],
        )
    )

    async def _started(processor: Any, strategy: Any) -> None:
        state.write(BotEventKind.TURN_START)

    async def _stopped(processor: Any, strategy: Any) -> None:
        state.write(BotEventKind.TURN_END)

    turns.add_event_handler("on_user_turn_started", _started)
    turns.add_event_handler("on_user_turn_stopped", _stopped)

    pipeline = Pipeline(
        [
            transport.input(),
            VADProcessor(vad_analyzer=SileroVADAnalyzer()),
            turns,
            CannedReply(),
            PiperSpeech(state, pcm, rate),
            transport.output(),
        ]
    )
    worker = PipelineWorker(
        pipeline,
        params=PipelineParams(audio_in_sample_rate=rate, audio_out_sample_rate=rate),
        enable_rtvi=False,
    )

    async def _gone(transport: Any, client: Any) -> None:
        state.write(BotEventKind.CALL_END)
        await worker.cancel()

    transport.add_event_handler("on_client_disconnected", _gone)

    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    await runner.run()
