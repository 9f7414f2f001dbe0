"""The harness bench over real loopback websockets, and the PCM websocket adapter's transport.

Speed targets are reported by ``pmc bench harness``, never asserted here; the one timing bound
(15 ms of latency error on 4 rollouts) widens by the lateness the harness and the fake measured
of themselves, so a loaded machine does not fail it.
"""

import asyncio
import json
import math
import socket
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from pmc.bench import bench_harness
from pmc.cli import cli
from pmc.clock import RealClock
from pmc.systems import (
    EventKind,
    Family,
    SystemCard,
    SystemEvent,
    TransportError,
    WebsocketPcmAdapter,
)
from pmc.testing.loopback import (
    Endpointer,
    LoopbackBehaviour,
    fake_system_process,
    reply_chunks,
    reply_tone,
    serve_fake_system,
)

SR = 24_000
FRAME = 480  # 20 ms
MS = 1_000_000


def _card(endpoint: str) -> SystemCard:
    return SystemCard("loopback", "loopback-pcm", Family.HOSTED, endpoint=endpoint)


def _speech_frame(seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(FRAME) * 0.1).astype(np.float32)


def test_bench_runs_concurrent_rollouts_and_measures_the_known_latency() -> None:
    (row,) = bench_harness([4], latency_ms=500.0, speech_s=1.0)
    assert (row.concurrency, row.rollouts, row.failed) == (4, 4, 0)
    assert row.frames == 4 * (50 + math.ceil((500 + 1000 + 300) / 20))
    lateness = (row.lateness_p50_ms, row.lateness_p99_ms, row.lateness_max_ms)
    assert all(math.isfinite(x) and x >= 0 for x in lateness)
    assert lateness == tuple(sorted(lateness))
    # Every rollout measured within 15 ms of the known 500 ms, beyond what the fake itself
    # reports of its own lateness in sending and the harness of its own in streaming (on a
    # loaded machine both are starved: a late end of speech makes the reply late by as much).
    assert row.error_max_ms <= 15.0 + row.reply_late_max_ms + row.lateness_max_ms
    assert row.error_mean_ms > -0.1  # nothing in the harness can make a reply early
    data = json.loads(json.dumps(row.to_dict(), allow_nan=False))
    assert data["concurrency"] == 4 and data["latency_ms"] == 500.0


def test_cli_prints_a_table_and_writes_the_rows(tmp_path: Path) -> None:
    path = tmp_path / "bench.json"
    args = ["bench", "harness", "--concurrency", "2", "--seconds", "0.5", "--same-loop"]
    result = CliRunner().invoke(cli, [*args, "--json", str(path)])
    assert result.exit_code == 0, result.output
    assert "harness bench" in result.output
    data = json.loads(path.read_text())
    assert data["same_loop"] is True
    assert [r["concurrency"] for r in data["rows"]] == [2]
    assert data["rows"][0]["rollouts"] == 2 and data["rows"][0]["failed"] == 0


def test_the_fake_system_can_run_in_a_child_process_and_stops_with_it() -> None:
    async def one_turn(url: str) -> SystemEvent:
        adapter = WebsocketPcmAdapter(_card(url), RealClock())
        await adapter.connect()
        await _say_something(adapter)
        async for event in adapter.events():
            if event.kind is EventKind.SIGNAL:
                await adapter.close()
                return event
        raise AssertionError("no reply")

    with fake_system_process(LoopbackBehaviour(latency_ms=300.0, reply_ms=200.0)) as url:
        signal = asyncio.run(one_turn(url))
    assert signal.detail["latency_ms"] == 300.0 and signal.detail["end_of_speech_frame"] == 4
    port = int(url.rsplit(":", 1)[1])
    with socket.socket() as sock, pytest.raises(ConnectionRefusedError):
        sock.connect(("127.0.0.1", port))  # the child has gone, and its port with it


def test_cli_refuses_a_bad_concurrency_list() -> None:
    result = CliRunner().invoke(cli, ["bench", "harness", "--concurrency", "8,x"])
    assert result.exit_code != 0
    assert "comma-separated" in result.output


def test_endpointer_ends_speech_at_the_last_loud_frame_after_enough_silence() -> None:
    endpointer = Endpointer(silence_ms=100)
    loud = (_speech_frame() * 32767).astype("<i2").tobytes()
    quiet = bytes(FRAME * 2)
    assert endpointer.push(quiet, 0) is None  # silence before speech ends nothing
    assert [endpointer.push(loud, (i + 1) * 20 * MS) for i in range(1, 4)] == [None] * 3
    assert [endpointer.push(quiet, (i + 1) * 20 * MS) for i in range(4, 8)] == [None] * 4
    ended = endpointer.push(quiet, 9 * 20 * MS)  # the fifth silent frame completes 100 ms
    assert ended is not None and (ended.frame, ended.arrival_ns) == (3, 4 * 20 * MS)
    assert endpointer.push(quiet, 10 * 20 * MS) is None  # one reply per turn


def test_the_known_latency_cannot_be_shorter_than_the_endpointing_silence() -> None:
    with pytest.raises(ValueError, match="silence_ms"):
        LoopbackBehaviour(latency_ms=200.0, silence_ms=300.0)


def test_reply_chunks_split_samples_across_messages() -> None:
    chunks = reply_chunks(1000.0)
    assert len(chunks) > 2 and all(len(c) % 2 == 1 for c in chunks[:-1])
    assert sum(len(c) for c in chunks) == 2 * SR


async def _say_something(adapter: WebsocketPcmAdapter, speech_frames: int = 5) -> None:
    """Speech, then enough silence for the fake to end the turn (sent at once, not in real time)."""
    for i in range(speech_frames):
        await adapter.send_frame(_speech_frame(i))
    for _ in range(16):
        await adapter.send_frame(np.zeros(FRAME, dtype=np.float32))


def test_receipt_stamps_are_taken_on_arrival_not_when_the_consumer_reads() -> None:
    pause_ns = 50 * MS

    async def scenario() -> list[tuple[SystemEvent, int]]:
        clock = RealClock()
        async with serve_fake_system(LoopbackBehaviour(latency_ms=300.0, reply_ms=1000.0)) as url:
            adapter = WebsocketPcmAdapter(_card(url), clock)
            await adapter.connect()
            await _say_something(adapter)
            seen = []
            async for event in adapter.events():
                seen.append((event, clock.now_ns()))
                if event.kind is EventKind.SIGNAL:
                    break
                await asyncio.sleep(pause_ns / 1e9)  # a slow consumer
            await adapter.close()
            return seen

    seen = asyncio.run(scenario())
    audio = [(e, read) for e, read in seen if e.kind is EventKind.AUDIO]
    signal = seen[-1][0]
    assert signal.detail["type"] == "reply" and signal.detail["end_of_speech_frame"] == 4
    assert len(audio) >= 5
    arrivals = [e.arrival_ns for e, _ in seen]
    assert arrivals == sorted(arrivals)
    # The whole reply was sent at once: its stamps are close together, while the slow reader
    # read each message a pause after the one before; every stamp predates its read by the
    # pauses that came before it.
    assert arrivals[-1] - arrivals[0] < pause_ns
    for j, (event, read) in enumerate(audio):
        assert read - event.arrival_ns >= j * pause_ns - 5 * MS
    # Odd-sized messages were put back together sample for sample.
    samples = np.concatenate([e.samples for e, _ in audio])
    np.testing.assert_allclose(samples, reply_tone(1000.0), atol=2 / 32768)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_connection_refused_is_a_transport_error() -> None:
    adapter = WebsocketPcmAdapter(_card(f"ws://127.0.0.1:{_free_port()}"), RealClock())
    with pytest.raises(TransportError, match="cannot connect"):
        asyncio.run(adapter.connect())


def test_a_card_without_endpoint_is_a_transport_error() -> None:
    adapter = WebsocketPcmAdapter(_card(""), RealClock())
    with pytest.raises(TransportError, match="no endpoint"):
        asyncio.run(adapter.connect())


def test_an_abrupt_close_mid_stream_is_a_transport_error() -> None:
    async def scenario() -> tuple[TransportError | None, TransportError | None]:
        async with serve_fake_system(LoopbackBehaviour(abort_after_frames=3)) as url:
            adapter = WebsocketPcmAdapter(_card(url), RealClock())
            await adapter.connect()
            send_error = None
            try:
                for i in range(200):  # the client learns of the reset a few sends later
                    await adapter.send_frame(_speech_frame(i))
                    await asyncio.sleep(0.005)
            except TransportError as exc:
                send_error = exc
            read_error = None
            try:
                async for _ in adapter.events():
                    pass
            except TransportError as exc:
                read_error = exc
            await adapter.close()
            return send_error, read_error

    send_error, read_error = asyncio.run(scenario())
    assert send_error is not None and "connection lost" in str(send_error)
    assert read_error is not None and "connection lost" in str(read_error)
