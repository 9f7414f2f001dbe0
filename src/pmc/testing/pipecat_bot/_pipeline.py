"""One call's real Pipecat pipeline: Twilio, Silero VAD, Smart Turn v3.2, a canned reply in Piper.

transport in -> VADProcessor -> UserTurnProcessor -> CannedReply -> PiperSpeech -> transport out,
at 8 kHz both ways (Pipecat's defaults resample and lose the end of each reply). The canned
reply stands in for an LLM: on the end of the caller's turn it says a fixed sentence. The
serializer is Pipecat's Twilio one with auto hang-up off (no credentials, no REST call), wrapped
to log each reply's first ``media`` and each ``clear`` just before they are sent.
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
from pmc.testing.pipecat_bot._reply import RATE, REPLY_TEXT

PIECE_BYTES = RATE * 2 * 20 // 1000
"""20 ms of 16-bit PCM at 8 kHz: one ``TTSAudioRawFrame``."""


class CallState:
    """What one call's processors share: its number, its stream sid, the log, a reply under way."""

    def __init__(self, log: BotLog, call: int, stream_sid: str) -> None:
        self.log = log
        self.call = call
        self.stream_sid = stream_sid
        self.reply_pending = False
        """A reply was voiced and its first audio has not left yet."""

    def write(self, event: BotEventKind) -> None:
        self.log.write(event, self.call, self.stream_sid)


class LoggingTwilioSerializer(TwilioFrameSerializer):
    """Pipecat's Twilio serializer, logging a reply's first ``media`` and every ``clear``."""

    def __init__(self, state: CallState, call_sid: str) -> None:
        params = TwilioFrameSerializer.InputParams(auto_hang_up=False)
        super().__init__(state.stream_sid, call_sid, params=params)
        self._state = state

    async def serialize(self, frame: Frame) -> str | bytes | None:
        payload = await super().serialize(frame)
        if payload is None:
            return None
        if isinstance(frame, InterruptionFrame):
            self._state.reply_pending = False  # what was queued is dropped
            self._state.write(BotEventKind.CLEAR)
        elif isinstance(frame, OutputAudioRawFrame) and self._state.reply_pending:
            self._state.reply_pending = False
            self._state.write(BotEventKind.FIRST_AUDIO)
        return payload


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
    """Speaks each text as the canned reply's audio: started, 20 ms pieces at 8 kHz, stopped."""

    def __init__(self, state: CallState, pcm: bytes) -> None:
        super().__init__()
        self._state = state
        self._pcm = pcm

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if not isinstance(frame, TextFrame):
            await self.push_frame(frame, direction)
            return
        self._state.reply_pending = True
        await self.push_frame(TTSStartedFrame())
        for at in range(0, len(self._pcm), PIECE_BYTES):
            piece = self._pcm[at : at + PIECE_BYTES]
            await self.push_frame(TTSAudioRawFrame(piece, sample_rate=RATE, num_channels=1))
        await self.push_frame(TTSStoppedFrame())


async def run_call(websocket: Any, log: BotLog, call: int, pcm: bytes) -> None:
    """Serve one accepted Twilio Media Streams websocket until the caller hangs up."""
    _, call_data = await parse_telephony_websocket(websocket)
    state = CallState(log, call, str(call_data["stream_id"]))
    state.write(BotEventKind.CALL_START)
    transport = FastAPIWebsocketTransport(
        websocket=websocket,
        params=FastAPIWebsocketParams(
            audio_in_enabled=True,
            audio_out_enabled=True,
            add_wav_header=False,
            serializer=LoggingTwilioSerializer(state, str(call_data["call_id"])),
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
            PiperSpeech(state, pcm),
            transport.output(),
        ]
    )
    worker = PipelineWorker(
        pipeline,
        params=PipelineParams(audio_in_sample_rate=RATE, audio_out_sample_rate=RATE),
        enable_rtvi=False,
    )

    async def _gone(transport: Any, client: Any) -> None:
        state.write(BotEventKind.CALL_END)
        await worker.cancel()

    transport.add_event_handler("on_client_disconnected", _gone)

    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    await runner.run()
