"""Talk-over points: the person's clip is played over the system's reply, timed from its onset."""

import asyncio
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from pmc.clock import VirtualClock
from pmc.gate import OnsetRule, speech_intervals
from pmc.harness import ProtocolParams, ProtocolRecord, RolloutResult, StopReason, run_rollout
from pmc.harness._rollout import RolloutJob
from pmc.points import PointKind
from pmc.systems import EventKind, Preload
from pmc.testing.systems import ScriptedSystem, tone
from tests.harness.test_protocol import card, point

RATE = 24_000
OFFSET_S = 0.7
"""The person's clip began 0.7 s into the reply it came over."""
CLIP = tone(1.0, 0.05, hz=330.0)


def talk_over(
    say: list[dict[str, Any]], kind: PointKind = PointKind.BARGE_IN, yield_ms: float | None = None
) -> tuple[RolloutResult, ScriptedSystem]:
    p = replace(point(kind, 2.0, 2.0, 2.0), inject_offset_s=OFFSET_S)
    c = card(say)
    if yield_ms is not None:
        c = replace(c, params={**c.params, "yield_ms": yield_ms})
    empty = np.zeros(0, dtype=np.float32)
    job = RolloutJob(p, c, 0, 0, tone(2.0, 0.05), Preload("", empty, empty, []), clip=CLIP)
    clock = VirtualClock()
    adapter = ScriptedSystem(c, clock)
    return asyncio.run(run_rollout(job, adapter, clock, ProtocolParams())), adapter


def record(result: RolloutResult) -> ProtocolRecord:
    assert result.trace.protocol is not None
    return result.trace.protocol


def test_the_clip_lands_at_the_replys_onset_plus_its_offset_to_the_sample() -> None:
    result, adapter = talk_over(
        [{"at_s": 2.5, "seconds": 3.0, "text": "well I think so"}], yield_ms=300
    )
    protocol = record(result)
    # The onset is where scoring's gate puts it on the played track.
    found = speech_intervals(result.played.track, onset=OnsetRule.ENVELOPE)
    reply = next(i for i in found if i.start_s >= 2.0)
    onset, clip_at = protocol.reply_onset_stream_s, protocol.clip_stream_s
    assert onset is not None and clip_at is not None
    assert onset == pytest.approx(reply.start_s, abs=1 / RATE)
    assert onset == pytest.approx(2.5, abs=0.001)
    assert clip_at == pytest.approx(onset + OFFSET_S, abs=1e-9)
    assert protocol.clip_s == pytest.approx(1.0)
    # What the system heard: silence, then the clip from its first sample (a sine's first
    # sample is zero, so the first it hears is the second).
    assert adapter.heard_stream_s == pytest.approx(clip_at + 1 / RATE, abs=1e-9)


def test_a_system_that_yields_is_cut_where_it_said_and_the_stream_outlasts_the_clip() -> None:
    result, adapter = talk_over(
        [{"at_s": 2.5, "seconds": 3.0, "text": "well I think so"}], yield_ms=300
    )
    protocol = record(result)
    stops = [e for e in result.trace.outputs if e.kind is EventKind.INTERRUPTED]
    assert len(stops) == 1
    assert adapter.heard_stream_s is not None
    assert stops[0].detail["stopped_stream_s"] == pytest.approx(adapter.heard_stream_s + 0.3)
    track = result.played.track
    last = np.flatnonzero(np.abs(track[: round(6 * RATE)]) > 1e-4)
    # Its own speech ends where it stopped (the clip is input: it is not on the played track).
    assert last[-1] / RATE == pytest.approx(adapter.heard_stream_s + 0.3, abs=1 / RATE)
    assert protocol.clip_stream_s is not None and protocol.clip_s is not None
    assert protocol.stop_reason is StopReason.REPLIED
    assert protocol.stop_stream_s >= protocol.clip_stream_s + protocol.clip_s + 2.0


def test_a_system_that_never_yields_talks_through_the_clip() -> None:
    result, adapter = talk_over([{"at_s": 2.5, "seconds": 3.0, "text": "well I think so"}])
    assert adapter.heard_stream_s is None
    assert not [e for e in result.trace.outputs if e.kind is EventKind.INTERRUPTED]
    loud = np.flatnonzero(np.abs(result.played.track) > 1e-4)
    assert loud[-1] / RATE == pytest.approx(5.5, abs=0.001)


def test_a_system_that_never_replies_hears_no_clip_and_ends_with_no_reply() -> None:
    result, adapter = talk_over([], yield_ms=300)
    protocol = record(result)
    assert protocol.stop_reason is StopReason.NO_REPLY
    assert protocol.reply_onset_stream_s is None and protocol.clip_stream_s is None
    assert adapter.heard_stream_s is None


def test_the_record_keeps_the_talk_over_fields_only_at_talk_over_points() -> None:
    result, _ = talk_over(
        [{"at_s": 2.5, "seconds": 3.0, "text": "well"}], kind=PointKind.BACKCHANNEL
    )
    data = record(result).to_dict()
    assert {"reply_onset_stream_s", "clip_stream_s", "clip_s"} <= data.keys()
    assert ProtocolRecord.from_dict(data) == record(result)
    plain = replace(record(result), reply_onset_stream_s=None, clip_stream_s=None, clip_s=None)
    assert "clip_s" not in plain.to_dict()
