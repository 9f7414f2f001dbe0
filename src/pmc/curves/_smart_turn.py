"""Pipecat's Smart Turn swept by replay: its VAD's stop and the model's threshold.

A point's live stream is resampled for Pipecat once; the VAD runs once per stop setting (its
states do not depend on the threshold, nor on what the card replies, since it listens
throughout); each threshold then replays the card's turns on those states, the model judging
each stretch of speech once (:class:`pmc.systems.SmartTurnReplayer`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from pmc.audio import FloatArray
from pmc.curves._cards import bundled_like
from pmc.systems import (
    ReplayedReply,
    SmartTurnReplayer,
    SmartTurnSetting,
    SystemCard,
    adapter_params,
    heard_pcm,
    smart_turn_reply,
)

SMART_TURN_ADAPTER = "pipecat-smart-turn"

STOP_KEY = "vad_stop_secs"
FALLBACK_KEY = "smart_turn_stop_secs"
FALLBACK_S = 3.0
"""Smart Turn's silence fallback when the card sets none (Pipecat's ``SmartTurnParams``)."""


def smart_turn_replays(
    card: SystemCard,
    stop_ms: Sequence[float],
    thresholds: Sequence[float],
    margin_s: float,
) -> tuple[
    list[tuple[float, float]],
    Callable[[FloatArray], Iterator[list[ReplayedReply]]],
    Callable[[float, float], tuple[str, ...]],
]:
    """The settings (stop in ms, threshold), each point's replies at them, and the cards at each.

    The silent tail after the live audio holds the longest stop, the model's silence fallback,
    the reply and ``margin_s``.
    """
    own = SmartTurnSetting.of_card(card)
    pairs = [(float(ms), float(t)) for t in (thresholds or (own.threshold,)) for ms in stop_ms]
    settings = [SmartTurnSetting(ms / 1000, t) for ms, t in pairs]
    replayer = SmartTurnReplayer(card)
    reply = smart_turn_reply(card)
    interruptions = bool(adapter_params(card).interruptions)
    fallback_s = float(card.turn_detection.get(FALLBACK_KEY, FALLBACK_S))
    tail_s = max(stop_ms) / 1000 + fallback_s + reply.latency_s + reply.length_s + margin_s
    frame_s = card.frame_ms / 1000

    def replays(audio: FloatArray) -> Iterator[list[ReplayedReply]]:
        frames = heard_pcm(audio, card, tail_s)
        states = {}
        for setting in settings:
            if setting.vad_stop_s not in states:
                states[setting.vad_stop_s] = replayer.vad_states(frames, setting.vad_stop_s)
            heard = states[setting.vad_stop_s]
            yield replayer.replay(frames, heard, frame_s, setting.threshold, reply, interruptions)

    def others(table: dict[str, object]) -> dict[str, object]:
        return {k: v for k, v in table.items() if k != STOP_KEY}

    def cards(ms: float, threshold: float) -> tuple[str, ...]:
        setting = SmartTurnSetting(ms / 1000, threshold)
        return bundled_like(
            card,
            lambda c: (
                others(c.turn_detection) == others(card.turn_detection)
                and SmartTurnSetting.of_card(c) == setting
            ),
        )

    return pairs, replays, cards
