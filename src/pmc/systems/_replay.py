"""The endpointer cascade's turn-taking replayed from its input alone, at any silence setting.

The cascade's decisions depend only on what it hears: Silero's probability for each 32 ms
window, and, while it replies, whether speech over the reply lasts long enough to stop it. So
the probabilities of a stream are computed once, exactly as the adapter computes them (the same
frames, resampler and model), and every setting's endpoints and replies follow from them in
microseconds, with no recognition and no voice (docs/architecture.md "Trade-off curves").
:class:`pmc.systems._endpointer.EndpointerCascade` is the behaviour this mirrors, frame by
frame; the curves' tests hold the two equal on the demo's points.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import soxr

from pmc.audio import SAMPLE_RATE, FloatArray
from pmc.gate import OnsetRule, speech_intervals
from pmc.systems._adapter import adapter_params
from pmc.systems._card import SystemCard
from pmc.systems._endpointer import (
    HYSTERESIS,
    MIN_SPEECH_MS,
    THRESHOLD,
    SilenceEndpointer,
    number,
    voiced,
)
from pmc.systems._vad import VAD_RATE, WINDOW, StreamingVad


@dataclass(frozen=True)
class CascadeSetting:
    """The endpointer settings a replay uses (a card's ``turn_detection``)."""

    silence_ms: float
    threshold: float = THRESHOLD
    min_speech_ms: float = MIN_SPEECH_MS

    @classmethod
    def of_card(cls, card: SystemCard) -> CascadeSetting:
        """The settings an endpointer-cascade card gives its endpointer."""
        turns = card.turn_detection
        return cls(
            number(card, turns, "silence_ms", 500.0),
            number(card, turns, "threshold", THRESHOLD),
            number(card, turns, "min_speech_ms", MIN_SPEECH_MS),
        )


@dataclass(frozen=True)
class ReplayedReply:
    """One endpoint and the reply it started, on the stream clock (seconds).

    Attributes:
        decided_s: The frame whose audio closed the silence window (the ``endpointed`` signal).
        starts_s: The reply's first sample, the card's reply latency later.
        speech_s: Where the reply's speech begins (its voice's own lead-in after the start).
        ends_s: Where it stopped: played out, or stopped by speech over it.
    """

    decided_s: float
    starts_s: float
    speech_s: float
    ends_s: float


def heard_windows(audio: FloatArray, card: SystemCard, tail_s: float) -> list[FloatArray]:
    """Silero's window probabilities of ``audio`` then ``tail_s`` of silence, by input frame.

    Each frame's list holds the windows it completed, as the cascade computes them while it
    streams.
    """
    step = card.frame_samples
    frames = math.ceil(len(audio) / step) + math.ceil(tail_s * card.sample_rate / step)
    padded = np.zeros(frames * step, dtype=np.float32)
    padded[: len(audio)] = audio
    resampler = soxr.ResampleStream(card.sample_rate, VAD_RATE, 1, dtype="float32", quality="HQ")
    vad = StreamingVad()
    return [
        vad.push(resampler.resample_chunk(padded[i * step : (i + 1) * step])) for i in range(frames)
    ]


@dataclass(frozen=True)
class ReplyShape:
    """What the replay needs of the card's reply: its latency, length and lead-in of silence."""

    latency_s: float
    length_s: float
    lead_s: float
    interrupt_windows: int | None

    @classmethod
    def of_card(cls, card: SystemCard) -> ReplyShape:
        """The card's fallback reply as the cascade voices it (what it says to a statement)."""
        params = adapter_params(card)
        voice = voiced(params.reply_text)
        found = speech_intervals(voice, onset=OnsetRule.ENVELOPE)
        windows = None
        if params.interrupt_ms is not False:
            windows = max(1, math.ceil(float(params.interrupt_ms) * VAD_RATE / 1000 / WINDOW))
        return cls(
            float(params.reply_latency_ms) / 1000,
            len(voice) / SAMPLE_RATE,
            found[0].start_s if found else 0.0,
            windows,
        )


def replay(
    windows: Sequence[FloatArray], frame_s: float, setting: CascadeSetting, reply: ReplyShape
) -> list[ReplayedReply]:
    """Every endpoint and reply of one stream at ``setting``, frame by frame as the cascade.

    Frame ``i`` is heard at ``(i + 1) * frame_s`` (when its last sample has been spoken). While
    a reply is pending or playing the cascade does not endpoint; once it plays it stops when
    speech over it lasts the card's interrupt time; it listens again when the reply has
    played out or stopped.
    """
    endpointer = SilenceEndpointer(setting.threshold, setting.silence_ms, setting.min_speech_ms)
    neg = max(setting.threshold - HYSTERESIS, 0.01)
    out: list[ReplayedReply] = []
    current: tuple[float, float] | None = None  # (decided, starts) of the reply under way
    heard = 0
    for i, probabilities in enumerate(windows):
        now = (i + 1) * frame_s
        if current is not None and now >= current[1] + reply.length_s:
            out.append(_reply(current, reply, current[1] + reply.length_s))
            current, heard = None, 0
            endpointer.reset()
        if current is not None:
            if reply.interrupt_windows is None or now < current[1]:
                continue
            for p in probabilities:
                if heard or p >= setting.threshold:
                    heard = heard + 1 if p >= neg else 0
                if heard >= reply.interrupt_windows:
                    out.append(_reply(current, reply, now))
                    current, heard = None, 0
                    endpointer.reset()
                    break
            continue
        for p in probabilities:
            if endpointer.feed(float(p)):
                current = (now, now + reply.latency_s)
                break
    if current is not None:
        out.append(_reply(current, reply, current[1] + reply.length_s))
    return out


def _reply(current: tuple[float, float], reply: ReplyShape, ends_s: float) -> ReplayedReply:
    decided, starts = current
    return ReplayedReply(decided, starts, starts + reply.lead_s, ends_s)
