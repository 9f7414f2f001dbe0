import asyncio
from pathlib import Path

import numpy as np

from pmc import io
from pmc.clock import NS_PER_S, VirtualClock
from pmc.harness import (
    ClockKind,
    FrameTiming,
    ProtocolParams,
    ProtocolRecord,
    RolloutTrace,
    StopReason,
    TraceRecorder,
    read_rollout,
    write_rollout,
)
from pmc.points import PointKind
from pmc.systems import EventKind, Family, SystemEvent

SR = 24_000
MS = 1_000_000


def _tone(seconds: float, value: float) -> np.ndarray:
    return np.full(round(seconds * SR), value, dtype=np.float32)


def test_messages_are_stamped_on_receipt_not_after_parsing() -> None:
    clock = VirtualClock()
    recorder = TraceRecorder(clock)

    async def transport() -> None:
        await clock.sleep_until(100 * MS)  # the message reaches the socket at 100 ms
        arrival = recorder.stamp()
        await clock.sleep_until(130 * MS)  # decoding takes 30 ms
        recorder.received(SystemEvent(EventKind.AUDIO, arrival, _tone(0.1, 0.2)))

    asyncio.run(transport())
    (chunk,) = recorder.chunks()
    assert chunk.arrival_ns == 100 * MS


def _recorded() -> tuple[TraceRecorder, list[FrameTiming]]:
    recorder = TraceRecorder(VirtualClock())
    t0 = 2 * NS_PER_S
    recorder.received(SystemEvent(EventKind.SIGNAL, t0 + 900 * MS, detail={"event": "started"}))
    recorder.received(SystemEvent(EventKind.AUDIO, t0 + 1000 * MS, _tone(0.5, 0.1), "hello"))
    recorder.received(SystemEvent(EventKind.AUDIO, t0 + 1200 * MS, _tone(0.5, 0.2)))
    recorder.received(SystemEvent(EventKind.INTERRUPTED, t0 + 1700 * MS))
    inputs = [
        FrameTiming(i, t0 + (i + 1) * 20 * MS, t0 + (i + 1) * 20 * MS + i * MS) for i in range(5)
    ]
    return recorder, inputs


def test_trace_records_everything_with_its_audit(tmp_path: Path) -> None:
    recorder, inputs = _recorded()
    trace, played = recorder.finish(
        "pause-x", "never-speak", 0, 2 * NS_PER_S, inputs, {"a": 1}, 3.0
    )
    assert [o.kind for o in trace.outputs] == [
        EventKind.SIGNAL,
        EventKind.AUDIO,
        EventKind.AUDIO,
        EventKind.INTERRUPTED,
    ]
    assert [o.samples for o in trace.outputs] == [0, 12_000, 12_000, 0]
    assert trace.audit.lateness_max_ms == 4.0 and not trace.audit.late
    # Played: 1.0-1.5 s the first chunk, 1.5-1.7 s the second until the interruption.
    assert played.dropped_samples == round(0.3 * SR)
    assert played.backlog_max_ms == 300.0
    assert trace.audit.output_backlog_max_ms == 300.0
    assert RolloutTrace.from_dict(trace.to_dict()) == trace


def test_rollout_files_round_trip_and_are_deterministic(tmp_path: Path) -> None:
    recorder, inputs = _recorded()
    trace, played = recorder.finish("pause-x", "never-speak", 0, 2 * NS_PER_S, inputs, {}, 3.0)
    for name in ("one", "two"):
        write_rollout(tmp_path / name, trace, played, recorder.raw_audio())
    for file in ("trace.json", "played.flac", "output.wav"):
        assert (tmp_path / "one" / file).read_bytes() == (tmp_path / "two" / file).read_bytes()
    again, track = read_rollout(tmp_path / "one")
    assert again == trace
    assert len(track) == 3 * SR
    np.testing.assert_allclose(track, played.track, atol=1 / 32767)
    assert np.abs(track[round(1.6 * SR)] - 0.2) < 1e-3
    assert not track[round(1.75 * SR) :].any()


def test_the_protocol_block_keeps_its_json_form(tmp_path: Path) -> None:
    record = ProtocolRecord(
        PointKind.TURN_END,
        Family.HOSTED,
        "3",
        ClockKind.REAL,
        7,
        2.013,
        2.013,
        2.013,
        StopReason.CAP,
        32.02,
        2.013,
        None,
        ProtocolParams(),
    )
    written = {
        "kind": "turn_end",
        "family": "hosted",
        "adapter_version": "3",
        "clock": "real",
        "seed": 7,
        "live_s": 2.013,
        "boundary_stream_s": 2.013,
        "boundary_end_stream_s": 2.013,
        "stop_reason": "cap",
        "stop_stream_s": 32.02,
        "end_of_input_stream_s": 2.013,
        "reference_point_id": None,
        "params": {
            "pause_drain_s": 3.0,
            "pause_extra_s": 8.0,
            "reply_silence_s": 2.0,
            "no_reply_s": 8.0,
            "cap_s": 30.0,
            "late_bound_ms": 20.0,
        },
    }
    assert record.to_dict() == written
    assert list(record.to_dict()) == list(written)
    assert ProtocolRecord.from_dict(written) == record
    recorder, inputs = _recorded()
    trace, played = recorder.finish(
        "pause-x", "never-speak", 0, 2 * NS_PER_S, inputs, {}, 3.0, record
    )
    write_rollout(tmp_path, trace, played, recorder.raw_audio())
    assert io.read_json(tmp_path / "trace.json")["protocol"] == written
    assert read_rollout(tmp_path)[0].protocol == record
    # A trace recorded outside a rollout holds an empty block, and reads back without one.
    bare, _ = recorder.finish("pause-x", "never-speak", 0, 2 * NS_PER_S, inputs, {}, 3.0)
    assert bare.to_dict()["protocol"] == {}
    assert RolloutTrace.from_dict(bare.to_dict()).protocol is None
