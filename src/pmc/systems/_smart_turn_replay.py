"""Pipecat's Smart Turn stack replayed from its input alone, at any VAD stop and model threshold.

The ``pipecat-smart-turn`` card decides from what it hears: Silero's VAD states, then Smart
Turn's probability for the buffered speech whenever the VAD reports a stop. Neither depends on
the reply, so a point's live stream is fed, frame by frame and in the card's order, through
Pipecat's own analyzers with no recogniser and no voice: the VAD once per stop setting, and the
model only for speech it has not judged before (every threshold and every later setting reuses
its probability, and the inference time it measured then). What the card does with a verdict
(reply after its latency, a barge-in stopping it, listening again) is :class:`SmartTurnCascade`'s,
followed here step by step (docs/architecture.md "Trade-off curves").
"""

from __future__ import annotations

import hashlib
import math
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import soxr

from pmc.audio import SAMPLE_RATE, FloatArray, resample, to_pcm16
from pmc.gate import OnsetRule, speech_intervals
from pmc.systems._adapter import adapter_params
from pmc.systems._card import SystemCard
from pmc.systems._endpointer import number, voiced
from pmc.systems._replay import ReplayedReply, ReplyShape
from pmc.systems._smart_turn import (
    PIPECAT_RATE,
    ROLLOUT_TIME,
    TURN_KEYS,
    VAD_KEYS,
    card_settings,
    pipecat,
)

SMART_TURN_THRESHOLD = 0.5
"""Smart Turn v3's own cut: a probability above it is a complete turn
(``LocalSmartTurnAnalyzerV3._predict_endpoint``)."""


@dataclass(frozen=True)
class SmartTurnSetting:
    """The two settings a Smart Turn replay sweeps: the VAD's stop and the model's threshold."""

    vad_stop_s: float
    threshold: float = SMART_TURN_THRESHOLD

    @classmethod
    def of_card(cls, card: SystemCard) -> SmartTurnSetting:
        """A ``pipecat-smart-turn`` card's settings (Pipecat's default stop where unset)."""
        default = float(pipecat()["vad"].VADParams().stop_secs)
        return cls(number(card, card.turn_detection, "vad_stop_secs", default))


def smart_turn_reply(card: SystemCard) -> ReplyShape:
    """The card's reply as the cascade voices it; Pipecat's VAD, not a window count, stops it."""
    params = adapter_params(card)
    voice = voiced(params.reply_text)
    found = speech_intervals(voice, onset=OnsetRule.ENVELOPE)
    lead = found[0].start_s if found else 0.0
    return ReplyShape(float(params.reply_latency_ms) / 1000, len(voice) / SAMPLE_RATE, lead, None)


def heard_pcm(audio: FloatArray, card: SystemCard, tail_s: float) -> list[bytes]:
    """Each input frame of ``audio`` then ``tail_s`` of silence as Pipecat gets it: 16 kHz PCM.

    A frame whose samples the stream resampler holds back for a later one is empty, as the card
    sees it (and skips).
    """
    if card.sample_rate != SAMPLE_RATE:
        audio = resample(audio, SAMPLE_RATE, card.sample_rate)
    step = card.frame_samples
    frames = math.ceil(len(audio) / step) + math.ceil(tail_s * card.sample_rate / step)
    padded = np.zeros(frames * step, dtype=np.float32)
    padded[: len(audio)] = audio
    stream = soxr.ResampleStream(card.sample_rate, PIPECAT_RATE, 1, dtype="float32", quality="HQ")
    return [
        to_pcm16(stream.resample_chunk(padded[i * step : (i + 1) * step])).tobytes()
        for i in range(frames)
    ]


class SmartTurnReplayer:
    """Pipecat's analyzers for one card, reused across points and settings.

    ``vad_states`` runs the VAD over a stream at a stop setting; ``replay`` plays the card's
    decisions on those states at a threshold. Smart Turn's probabilities are kept by the audio
    they judged, with the inference time first measured for it.
    """

    def __init__(self, card: SystemCard) -> None:
        self.card = card
        self._modules = modules = pipecat()
        self._vad_params = card_settings(card, "vad_", VAD_KEYS)
        turn_params = card_settings(card, "smart_turn_", TURN_KEYS)
        with warnings.catch_warnings():  # Pipecat finds its models with a deprecated call
            warnings.simplefilter("ignore", DeprecationWarning)
            self._turn = modules["v3"].LocalSmartTurnAnalyzerV3(
                sample_rate=PIPECAT_RATE, params=modules["smart"].SmartTurnParams(**turn_params)
            )
        self._turn.set_sample_rate(PIPECAT_RATE)
        self._model = self._turn._predict_endpoint
        self._judged: dict[bytes, tuple[float, float]] = {}
        self._threshold = SMART_TURN_THRESHOLD
        self._spent_s = 0.0
        self._script: Iterator[float] | None = None
        self._turn._predict_endpoint = self._predict
        self.model_s: list[float] = []
        """For each reply of the last :meth:`replay`, the model time its decision waited (0 for
        the silence fallback): the decision is that long after the frame that asked."""

    def _predict(self, audio: FloatArray) -> dict[str, Any]:
        key = hashlib.sha256(np.ascontiguousarray(audio, dtype=np.float32).tobytes()).digest()
        if key not in self._judged:
            started = time.perf_counter()
            probability = float(self._model(audio)["probability"])
            self._judged[key] = (probability, time.perf_counter() - started)
        probability, self._spent_s = self._judged[key]
        if self._script is not None:
            self._spent_s = next(self._script, self._spent_s)
        return {"prediction": int(probability > self._threshold), "probability": probability}

    @property
    def inferences(self) -> int:
        """How many distinct stretches of speech the model has judged."""
        return len(self._judged)

    def vad_states(self, frames: Sequence[bytes], vad_stop_s: float) -> list[Any]:
        """The VAD's state after each frame (None for a frame Pipecat never got)."""
        modules = self._modules
        params = modules["vad"].VADParams(**{**self._vad_params, "stop_secs": vad_stop_s})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            vad = modules["silero"].SileroVADAnalyzer(sample_rate=PIPECAT_RATE, params=params)
        vad.set_sample_rate(PIPECAT_RATE)
        try:
            return [vad._run_analyzer(pcm) if pcm else None for pcm in frames]
        finally:
            vad._executor.shutdown(wait=False)

    def replay(
        self,
        frames: Sequence[bytes],
        states: Sequence[Any],
        frame_s: float,
        threshold: float,
        reply: ReplyShape,
        interruptions: bool = True,
        model_s: Sequence[float] | None = None,
    ) -> list[ReplayedReply]:
        """Every turn end and reply of one stream, as :class:`SmartTurnCascade` makes them.

        Frame ``i`` arrives at ``(i + 1) * frame_s``; a verdict holds the listener for the
        model's inference time, and frames that arrived meanwhile are heard after it, as the
        card's queue does on a virtual clock. ``model_s`` gives each verdict's inference time in
        order, as a run recorded them (its ``inference_ms``), in place of this replay's own:
        the card's run and the replay then take the same branches however loaded each machine
        was (a verdict 0.45 s slow put a reply's start after the barge-in that stopped it).
        """
        self._script = None if model_s is None else iter(model_s)  # only replays predict
        self._threshold = threshold
        start_secs = self._vad_params.get("start_secs", self._modules["vad"].VADParams().start_secs)
        turn, vad_state = self._turn, self._modules["vad"].VADState
        complete = self._modules["turn"].EndOfTurnState.COMPLETE
        turn.clear()
        turn.update_vad_start_secs(0.0)
        out: list[ReplayedReply] = []
        current: tuple[float, float] | None = None  # (decided, starts) of the reply under way
        last, speaking, free_s = vad_state.QUIET, False, 0.0

        self.model_s = []

        def end_turn(at_s: float, model_s: float = 0.0) -> None:
            nonlocal current
            current = (at_s, at_s + reply.latency_s)
            self.model_s.append(model_s)

        def listen_again(ends_s: float) -> None:
            nonlocal current
            assert current is not None
            out.append(ReplayedReply(current[0], current[1], current[1] + reply.lead_s, ends_s))
            current = None
            turn.clear()

        for i, (pcm, state) in enumerate(zip(frames, states, strict=True)):
            now = max((i + 1) * frame_s, free_s)
            if current is not None and now >= current[1] + reply.length_s:
                listen_again(current[1] + reply.length_s)
            if state is None:
                continue
            if current is None:
                ROLLOUT_TIME.now_s = now
                try:
                    fallback = turn.append_audio(pcm, speaking)
                finally:
                    ROLLOUT_TIME.now_s = None
                if fallback == complete:
                    end_turn(now)
            if state == last or state in (vad_state.STARTING, vad_state.STOPPING):
                continue
            last, speaking = state, state == vad_state.SPEAKING
            if current is not None:
                if speaking and interruptions and now >= current[1]:
                    listen_again(now)  # a barge-in stops the reply
                    turn.update_vad_start_secs(start_secs)
                continue
            if speaking:
                turn.update_vad_start_secs(start_secs)
                continue
            verdict = _judge(turn, complete)
            free_s = now + self._spent_s
            if verdict == complete:
                end_turn(free_s, self._spent_s)
        if current is not None:
            listen_again(current[1] + reply.length_s)
        return out


def _judge(turn: Any, complete: Any) -> Any:
    """``analyze_end_of_turn`` without its thread: the verdict, and the clearing it does."""
    state, _ = turn._process_speech_segment(turn._audio_buffer)
    if state == complete:
        turn._clear(state)
    return state
