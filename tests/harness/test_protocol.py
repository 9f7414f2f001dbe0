"""The protocol per point kind: what is streamed, when input ends, and why a rollout stops."""

import asyncio
from typing import Any

import numpy as np
import pytest

from pmc.clock import NS_PER_S, RealClock, VirtualClock
from pmc.corpus import Channel
from pmc.harness import ProtocolParams, ProtocolRecord, RolloutResult, StopReason, run_rollout
from pmc.harness._rollout import RolloutJob
from pmc.points import Point, PointKind
from pmc.systems import Family, Preload, SystemCard, TransportError
from pmc.testing.systems import ScriptedSystem, tone

PARAMS = ProtocolParams()
FRAME_S = 0.02


def point(kind: PointKind, live_s: float, boundary_s: float, boundary_end_s: float) -> Point:
    return Point(
        point_id=f"{kind.value}-test",
        kind=kind,
        conversation_id="c",
        user=Channel.A,
        system=Channel.B,
        history_start_conv_s=0.0,
        stream_start_conv_s=10.0,
        boundary_conv_s=10.0 + boundary_s,
        boundary_stream_s=boundary_s,
        boundary_end_conv_s=10.0 + boundary_end_s,
        boundary_end_stream_s=boundary_end_s,
        stream_end_conv_s=10.0 + live_s,
    )


def card(say: list[dict[str, Any]], family: Family = Family.LOCAL) -> SystemCard:
    return SystemCard("scripted-test", "scripted", family, params={"say": say})


def rollout(
    kind: PointKind,
    say: list[dict[str, Any]],
    family: Family = Family.LOCAL,
    live_s: float = 2.0,
    boundary_s: float = 2.0,
    boundary_end_s: float | None = None,
) -> tuple[RolloutResult, ScriptedSystem]:
    p = point(kind, live_s, boundary_s, boundary_s if boundary_end_s is None else boundary_end_s)
    c = card(say, family)
    live = tone(live_s, 0.05)
    empty = np.zeros(0, dtype=np.float32)
    job = RolloutJob(p, c, 0, 0, live, Preload("you are a test", empty, empty, []))
    clock = VirtualClock()
    adapter = ScriptedSystem(c, clock)
    return asyncio.run(run_rollout(job, adapter, clock, PARAMS)), adapter


def record(result: RolloutResult) -> ProtocolRecord:
    assert result.trace.protocol is not None
    return result.trace.protocol


def stop(result: RolloutResult) -> tuple[StopReason | None, float]:
    protocol = record(result)
    return protocol.stop_reason, protocol.stop_stream_s


def test_a_silent_system_at_a_pause_gets_3_s_of_drain_and_8_s_more() -> None:
    result, adapter = rollout(PointKind.PAUSE, [], live_s=4.0, boundary_s=1.5, boundary_end_s=2.5)
    reason, at = stop(result)
    assert reason is StopReason.DRAINED
    assert at == pytest.approx(4.0 + 3.0 + 8.0, abs=FRAME_S)
    # Every deadline until the stop sent a frame: live audio, then silence.
    assert adapter.frames_received == round((4.0 + 11.0) / FRAME_S)
    assert len(result.played.track) == round(at * 24_000)


def test_a_pause_drain_ends_after_3_s_once_the_system_has_spoken() -> None:
    say = [{"at_s": 5.0, "seconds": 0.5, "text": "yes"}]
    reason, at = stop(rollout(PointKind.PAUSE, say, live_s=4.0, boundary_s=1.5)[0])
    assert reason is StopReason.DRAINED
    assert at == pytest.approx(4.0 + 3.0, abs=FRAME_S)


def test_a_late_first_audio_ends_the_extended_drain_at_once() -> None:
    say = [{"at_s": 4.0 + 5.0, "seconds": 0.5, "text": "yes"}]
    reason, at = stop(rollout(PointKind.PAUSE, say, live_s=4.0, boundary_s=1.5)[0])
    assert reason is StopReason.DRAINED
    assert at == pytest.approx(4.0 + 5.0, abs=2 * FRAME_S)


def test_a_reply_stops_the_rollout_2_s_after_its_speech_ends() -> None:
    say = [{"at_s": 2.5, "seconds": 1.5, "text": "that sounds lovely"}]
    result, _ = rollout(PointKind.TURN_END, say)
    reason, at = stop(result)
    assert reason is StopReason.REPLIED
    assert at == pytest.approx(2.5 + 1.5 + 2.0, abs=2 * FRAME_S)
    # The played track holds the reply where it was played, its silences kept.
    track = result.played.track
    assert np.abs(track[: int(2.4 * 24_000)]).max() == 0
    assert np.sqrt(np.mean(track[int(2.6 * 24_000) : int(3.9 * 24_000)] ** 2)) > 0.05


def test_nothing_said_stops_8_s_after_the_turn_end() -> None:
    reason, at = stop(rollout(PointKind.TURN_END, [])[0])
    assert reason is StopReason.NO_REPLY
    assert at == pytest.approx(2.0 + 8.0, abs=FRAME_S)


def test_sound_without_words_is_not_a_reply() -> None:
    # Murmur (audio, no text) must not keep the rollout going to the cap.
    say = [{"at_s": 2.2, "seconds": 20.0, "text": "", "rms": 0.012}]
    reason, at = stop(rollout(PointKind.TURN_END, say)[0])
    assert reason is StopReason.NO_REPLY
    assert at == pytest.approx(10.0, abs=FRAME_S)


def test_a_backchannel_before_the_turn_end_is_not_the_reply() -> None:
    say = [
        {"at_s": 0.5, "seconds": 0.3, "text": "mm-hm"},
        {"at_s": 6.0, "seconds": 1.0, "text": "right, so then what happened"},
    ]
    reason, at = stop(rollout(PointKind.TURN_END, say)[0])
    assert reason is StopReason.REPLIED
    assert at == pytest.approx(6.0 + 1.0 + 2.0, abs=2 * FRAME_S)


def test_a_system_that_keeps_talking_is_stopped_at_the_cap() -> None:
    say = [{"at_s": 0.0, "seconds": 60.0, "text": "blah blah"}]
    result, _ = rollout(PointKind.TURN_END, say)
    reason, at = stop(result)
    assert reason is StopReason.CAP
    assert at == pytest.approx(2.0 + 30.0, abs=FRAME_S)
    # Still speaking at the cap, on the played track, which ends at the stop.
    assert len(result.played.track) == round(at * 24_000)
    assert np.sqrt(np.mean(result.played.track[-2400:] ** 2)) > 0.05


def test_recall_points_end_like_turn_ends() -> None:
    say = [{"at_s": 3.0, "seconds": 1.0, "text": "Paris"}]
    reason, at = stop(rollout(PointKind.FACT_RECALL, say)[0])
    assert reason is StopReason.REPLIED
    assert at == pytest.approx(6.0, abs=2 * FRAME_S)


def test_a_hosted_system_gets_an_end_of_input_at_the_turn_end_and_no_more_frames() -> None:
    say = [{"at_s": 3.0, "seconds": 1.0, "text": "sure"}]
    result, adapter = rollout(PointKind.TURN_END, say, family=Family.HOSTED)
    assert adapter.frames_received == round(2.0 / FRAME_S)
    # At the boundary, on the last live frame's deadline, right after that frame (not a frame
    # later): on the virtual clock the instants are exact.
    last = result.trace.inputs[-1]
    assert last.index == round(2.0 / FRAME_S) - 1
    assert [(t - result.trace.t0_ns) / NS_PER_S for t in adapter.commits] == [2.0]
    assert adapter.commits == [last.scheduled_ns] == [last.sent_ns]
    assert record(result).end_of_input_stream_s == 2.0
    assert stop(result)[0] is StopReason.REPLIED


def test_a_hosted_system_hears_the_live_audio_up_to_a_boundary_inside_a_frame_and_no_more() -> None:
    # The cuts are padded to whole 80 ms frames, so the live audio runs past a turn end; the
    # boundary here falls 13 ms into a 20 ms frame.
    say = [{"at_s": 3.0, "seconds": 1.0, "text": "sure"}]
    result, adapter = rollout(PointKind.TURN_END, say, Family.HOSTED, live_s=2.08, boundary_s=2.013)
    assert adapter.samples_received == round(2.013 * 24_000)
    last = result.trace.inputs[-1]
    assert last.index == 100  # 100 whole frames, then the 13 ms up to the boundary
    assert (last.scheduled_ns - result.trace.t0_ns) / NS_PER_S == pytest.approx(2.013, abs=1e-9)
    assert adapter.commits == [last.sent_ns]
    assert record(result).end_of_input_stream_s == pytest.approx(2.013, abs=1e-9)
    assert record(result).live_s == pytest.approx(2.013, abs=1e-9)
    # Everyone else hears the whole cut, padding included, then silence.
    local, other = rollout(PointKind.TURN_END, say, live_s=2.08, boundary_s=2.013)
    assert other.commits == []
    assert record(local).live_s == pytest.approx(2.08)


def test_silence_still_queued_for_playback_counts_as_silence() -> None:
    # A full-duplex system sends audio for every frame it hears, silent or not, so its queue
    # always reaches past the present; its reply has still ended.
    say = [
        {"at_s": 2.5, "seconds": 1.0, "text": "that sounds lovely"},
        {"at_s": 3.51, "seconds": 40.0, "text": "", "rms": 0.0},  # off the frame grid
    ]
    reason, at = stop(rollout(PointKind.TURN_END, say)[0])
    assert reason is StopReason.REPLIED
    assert at == pytest.approx(2.5 + 1.0 + 2.0, abs=2 * FRAME_S)


def test_a_hosted_system_at_a_pause_keeps_its_endpointer_and_hears_the_drain() -> None:
    _, adapter = rollout(PointKind.PAUSE, [], family=Family.HOSTED, boundary_s=1.0)
    assert adapter.commits == []
    assert adapter.frames_received == round((2.0 + 11.0) / FRAME_S)


def test_a_session_dropped_mid_stream_is_a_transport_error() -> None:
    ScriptedSystem.drop_after_frames = 30
    try:
        with pytest.raises(TransportError, match="closed"):
            rollout(PointKind.TURN_END, [])
    finally:
        ScriptedSystem.drop_after_frames = None


def test_a_rollout_whose_input_ran_late_is_marked_not_kept_clean() -> None:
    p = point(PointKind.TURN_END, 1.5, 1.5, 1.5)
    c = SystemCard("stalling", "scripted", Family.LOCAL, params={"say": [], "stall_ms": 60})
    empty = np.zeros(0, dtype=np.float32)
    job = RolloutJob(p, c, 0, 0, tone(1.5, 0.05), Preload("", empty, empty, []))
    clock = RealClock()
    fast = ProtocolParams(no_reply_s=0.5)
    result = asyncio.run(run_rollout(job, ScriptedSystem(c, clock), clock, fast))
    audit = result.trace.audit
    assert audit.late
    # The 50th frame's send stalls 60 ms: the next frame leaves at least 40 ms late and the one
    # after at least 20 ms, however fast or loaded the machine, and no deadline moves.
    inputs = result.trace.inputs
    assert inputs[50].lateness_ns >= 40_000_000
    assert inputs[51].lateness_ns >= 20_000_000
    assert audit.lateness_max_ms >= 40
    assert [t.scheduled_ns - result.trace.t0_ns for t in inputs] == [
        (t.index + 1) * 20_000_000 for t in inputs
    ]


def test_input_frames_go_out_at_their_deadlines_on_the_virtual_clock() -> None:
    result, _ = rollout(PointKind.TURN_END, [])
    timings = result.trace.inputs
    assert [t.scheduled_ns - result.trace.t0_ns for t in timings[:3]] == [
        20_000_000,
        40_000_000,
        60_000_000,
    ]
    assert result.trace.audit.lateness_max_ms == 0.0
    assert not result.trace.audit.late
