"""The person's timing at a talk-over point, measured on its reply as the harness and scoring do."""

from __future__ import annotations

import numpy as np

from pmc.audio import SAMPLE_RATE, FloatArray
from pmc.gate import TALK_QUIET_S, GateParams, talk_end
from pmc.points._measure import person_timing

RATE = SAMPLE_RATE
LOUD = 0.3
"""Far above the gate's opening level (0.01 RMS), so that onsets and ends are sharp."""


def bursts(*spans: tuple[float, float]) -> FloatArray:
    """Constant loud samples over each ``(start_s, end_s)``, silence elsewhere."""
    end = max(b for _, b in spans)
    out = np.zeros(round(end * RATE), np.float32)
    for a, b in spans:
        out[round(a * RATE) : round(b * RATE)] = LOUD
    return out


def test_the_reply_onset_and_the_end_of_talk_are_placed_to_the_sample() -> None:
    # A reply of three words, a breath of 0.5 s inside its second stretch, then a new stretch
    # after more than the quiet time: the talk under way at the clip ends at 2.5 s.
    reply = bursts((0.0, 0.6), (0.7, 1.5), (2.0, 2.5), (2.5 + TALK_QUIET_S + 0.2, 4.0))
    reply_at, boundary = 48_011, 40_000  # the reply begins 3.0 s in, a sample after the grid
    clip_at = reply_at + round(1.2 * RATE)
    timing = person_timing(reply, reply_at, boundary, clip_at, clip_at + round(0.5 * RATE))
    assert timing is not None
    assert round(timing.offset_s * RATE) == clip_at - reply_at
    assert round(timing.stop_s * RATE) == round(2.5 * RATE) - round(1.2 * RATE)
    assert timing.talk_over_s == 0.5  # the clip ended first


def test_talk_ended_before_the_clips_end_is_all_the_talk_over() -> None:
    reply = bursts((0.0, 1.0))
    clip_at = round(0.8 * RATE)
    timing = person_timing(reply, 0, 0, clip_at, clip_at + RATE)
    assert timing is not None
    assert timing.stop_s == timing.talk_over_s == 0.2


def test_nothing_to_time_is_none() -> None:
    reply = bursts((0.0, 1.0))
    # the clip comes after the talk ended: nothing under way to stop
    assert person_timing(reply, 0, 0, round(1.5 * RATE), 2 * RATE) is None
    # the only onset is before the boundary: the harness would find no reply to time from
    assert person_timing(reply, 0, RATE // 2, round(0.8 * RATE), RATE) is None


def test_talk_end_groups_the_gates_intervals_as_scoring_does() -> None:
    track = bursts((0.0, 0.5), (0.5 + TALK_QUIET_S, 2.0), (3.5, 4.0))
    gate = GateParams()
    assert talk_end(track, RATE // 4, gate, RATE) == 2 * RATE  # a gap of exactly 1 s is joined
    assert talk_end(track, round(3.6 * RATE), gate, RATE) == len(track)
    assert talk_end(track, round(2.5 * RATE), gate, RATE) is None
    assert talk_end(track, RATE // 4, gate, RATE, quiet_s=0.5) == RATE // 2
