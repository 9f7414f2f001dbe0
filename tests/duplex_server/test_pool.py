"""``pmc serve-duplex --ray``: a pool of two duplex servers on a local Ray cluster, on CPU.

The registry's rules are checked on their own first (plain asyncio, no Ray). Then the real
command runs in a child process, joined to this module's cluster, with two replicas of the
tiny models; the moshi-preloaded card names the pool (``pool://NAME/api/duplex``) and runs
through ``run_rollouts`` here, on two pause points (a turn end runs a random-weight model to the
30 s cap) at concurrency 2. One replica's server is then killed (SIGKILL) while a session
streams on it, placed by progress: the registry shows the replica busy and the server's log
shows it has forced this session's history. Then a replica's actor is killed (its server must
end with it). Last, Ctrl-C stops the pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner

from pmc import cluster, io
from pmc.audio import SAMPLE_RATE, wav_bytes
from pmc.cli import cli
from pmc.duplex_server import POOL_NAMESPACE, PoolRegistry, PoolState, Replica, pool_actor_name
from pmc.errors import PmcError
from pmc.harness import RunSettings, SystemTally, run_rollouts, runs_dir
from pmc.points import MANIFEST_FILE, Point, PointKind
from pmc.systems import Family, SystemCard, adapter_factory, bundled_cards, load_card
from pmc.testing.duplex_server import SERVER_ENV, model_args
from pmc.testing.points import write_points

pytestmark = pytest.mark.slow

SYSTEMS = bundled_cards()
POOL = "test-pool"
REPLICAS = 2
START_S = 240.0
"""The pool is up within this: a Ray actor and a model load per replica, on two busy cores."""
WAIT_S = 120.0
"""Anything else waited for (a session under way, a replacement, a stop) comes within this."""
POLL_S = 0.05
T = TypeVar("T")


def until(what: str, found: Callable[[], T | None], limit_s: float = WAIT_S) -> T:
    """Ask ``found`` until it answers (not None), for at most ``limit_s``."""
    deadline = time.monotonic() + limit_s
    while (answer := found()) is None:
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {limit_s:g} s")
        time.sleep(POLL_S)
    return answer


# -- the registry alone ------------------------------------------------------------------------


def _replica(port: int) -> Replica:
    return Replica(f"ws://10.0.0.1:{port}", "10.0.0.1", port, f"/tmp/{port}.log")


def test_the_registry_hands_out_free_replicas_first_come_first_served() -> None:
    async def scenario() -> None:
        registry = PoolRegistry()
        await registry.add(_replica(1))
        first = await registry.acquire("a")
        second = asyncio.ensure_future(registry.acquire("b"))
        third = asyncio.ensure_future(registry.acquire("c"))
        await asyncio.sleep(0)
        assert not second.done() and (await registry.state()).waiting == 2
        await registry.add(_replica(2))  # a new replica goes to the longest waiting session
        assert await second == "ws://10.0.0.1:2"
        await registry.release(first)
        assert await third == first
        state = await registry.state()
        assert state.busy == ("ws://10.0.0.1:1", "ws://10.0.0.1:2") and state.waiting == 0
        assert state.sessions == {"ws://10.0.0.1:1": 2, "ws://10.0.0.1:2": 1}

    asyncio.run(scenario())


def test_a_failed_session_holds_its_replica_out_until_the_supervisor_checked_it() -> None:
    async def scenario() -> None:
        registry = PoolRegistry()
        await registry.add(_replica(1))
        endpoint = await registry.acquire("a")
        await registry.release(endpoint, failed=True, ticket="a")
        waiting = asyncio.ensure_future(registry.acquire("b"))
        assert await registry.next_suspect() == endpoint
        await asyncio.sleep(0)
        assert not waiting.done() and (await registry.state()).suspect == (endpoint,)
        await registry.restore(endpoint)
        assert await waiting == endpoint
        assert (await registry.state()).failed == {endpoint: 1}

    asyncio.run(scenario())


def test_a_replaced_replica_leaves_and_late_releases_change_nothing() -> None:
    async def scenario() -> None:
        registry = PoolRegistry()
        await registry.add(_replica(1))
        endpoint = await registry.acquire("old")
        await registry.remove(endpoint)
        await registry.add(_replica(1))  # a new server on the port the old one had
        assert await registry.acquire("new") == endpoint
        await registry.release(endpoint, failed=True, ticket="old")  # the lost session, late
        state = await registry.state()
        assert state.busy == (endpoint,) and state.suspect == () and state.gone == (endpoint,)

    asyncio.run(scenario())


def test_a_session_that_stopped_waiting_gives_back_what_it_was_granted() -> None:
    async def scenario() -> None:
        registry = PoolRegistry()
        await registry.add(_replica(1))
        held = await registry.acquire("a")
        gave_up = asyncio.ensure_future(registry.acquire("b"))
        await asyncio.sleep(0)
        await registry.withdraw("b")  # its wait was cut short before it got anything
        with pytest.raises(asyncio.CancelledError):
            await gave_up
        await registry.release(held, ticket="a")
        assert (await registry.state()).busy == ()
        assert await registry.acquire("c") == held
        await registry.withdraw("c")  # granted, then the client gave up: it comes back
        assert (await registry.state()).busy == ()

    asyncio.run(scenario())


def test_pool_options_need_ray_and_leave_the_address_to_the_pool() -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["serve-duplex", "--replicas", "2", "--device", "cpu"])
    assert result.exit_code != 0 and "add --ray" in result.output
    result = runner.invoke(cli, ["serve-duplex", "--ray", "--port", "9000"])
    assert result.exit_code != 0 and "picks its own host, port" in result.output
    result = runner.invoke(cli, ["serve-duplex", "--ray", "--pool", "a/b"])
    assert result.exit_code != 0 and "--pool a/b" in result.output


# -- the pool on Ray ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ray_local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A local Ray cluster of two CPUs, one per replica, stopped after this module.

    The servers inherit the environment of the cluster's processes, which start here: the
    test servers' settings, and a temporary folder of the test's own for their logs.
    """
    with pytest.MonkeyPatch.context() as patch:
        for key, value in SERVER_ENV.items():
            patch.setenv(key, value)
        patch.setenv("TMPDIR", str(tmp_path_factory.mktemp("replicas")))
        ray = cluster.connect(None, num_cpus=REPLICAS)
        try:
            yield ray
        finally:
            cluster.disconnect()


@pytest.fixture
def this_node(ray_local: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reach the replicas at this machine's own address on loopback.

    A replica's endpoint carries its Ray node's IP, which the test-wide guard takes for the
    network; the servers listen on every interface, so loopback reaches the same server.
    """
    node = ray_local.util.get_node_ip_address()
    guarded = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> Any:
        if isinstance(address, tuple) and address[0] == node:
            address = ("127.0.0.1", *address[1:])
        return guarded(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)


@dataclass(frozen=True)
class Pool:
    """The running command and a handle on its registry."""

    process: subprocess.Popen[bytes]
    output: Path
    registry: Any

    def state(self) -> PoolState:
        state: PoolState = cluster.ray_module().get(self.registry.state.remote())
        return state


def _registry(ray: Any) -> Any | None:
    try:
        return ray.get_actor(pool_actor_name(POOL), namespace=POOL_NAMESPACE)
    except ValueError:
        return None


@pytest.fixture(scope="module")
def pool(
    ray_local: Any, tiny_models: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pool]:
    """``pmc serve-duplex --ray ADDRESS --replicas 2`` on CPU, once both replicas serve."""
    address = ray_local.get_runtime_context().gcs_address
    args = [sys.executable, "-m", "pmc", "serve-duplex", "--ray", address]
    args += ["--replicas", str(REPLICAS), "--gpus-per-replica", "0", "--pool", POOL]
    args += ["--device", "cpu", *model_args(tiny_models, stock=False)]
    output = tmp_path_factory.mktemp("pool") / "supervisor.txt"
    # Started with SIGINT ignored, as a shell starts a background job (`make test &`): the
    # command must still stop on Ctrl-C, whatever it inherited.
    ignoring = ["sh", "-c", 'trap "" INT; exec "$@"', "sh", *args]
    with output.open("wb") as sink:
        process = subprocess.Popen(ignoring, stdout=sink, stderr=subprocess.STDOUT)

    def serving() -> Any | None:
        if process.poll() is not None:
            pytest.fail(f"the command exited ({process.returncode}): {output.read_text()}")
        registry = _registry(ray_local)
        if registry is None:
            return None
        state: PoolState = ray_local.get(registry.state.remote())
        return registry if len(state.replicas) == REPLICAS else None

    try:
        yield Pool(process, output, until("two replicas serving", serving, START_S))
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(WAIT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _aligned_history(points: Path, point: Point) -> Point:
    """``point`` with its two history tracks equally long, as ``pmc points`` cuts them.

    The shorter track is padded with silence at the front, so both still end where the live
    stream starts, and the history starts that much earlier.
    """
    paths = [points / point.cuts[k] for k in ("history_user", "history_system")]
    tracks = [sf.read(path, dtype="float32")[0] for path in paths]
    length = max(len(t) for t in tracks)
    for path, track in zip(paths, tracks, strict=True):
        padded = np.concatenate([np.zeros(length - len(track), dtype=np.float32), track])
        io.write_bytes(path, wav_bytes(padded, SAMPLE_RATE))
    start = point.stream_start_conv_s - length / SAMPLE_RATE
    return dataclasses.replace(point, history_start_conv_s=start)


@pytest.fixture(scope="module")
def pause_points(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working directory with two pause points (of two conversations), nothing else."""
    workdir = tmp_path_factory.mktemp("pool-points")
    pauses = [
        _aligned_history(workdir / "points", p)
        for conversation in ("conv-1", "conv-2")
        for p in write_points(workdir, conversation)
        if p.kind is PointKind.PAUSE
    ]
    lines = "".join(io.json_line(p.to_dict()) for p in pauses)
    (workdir / "points" / MANIFEST_FILE).write_text(lines)
    return workdir


@pytest.fixture(scope="module")
def card() -> SystemCard:
    """The bundled moshi-preloaded card, naming the pool, one session per replica."""
    bundled = load_card(SYSTEMS / "moshi-preloaded.toml")
    endpoint = f"pool://{POOL}/api/duplex"
    return dataclasses.replace(bundled, endpoint=endpoint, concurrency=REPLICAS)


def _run(workdir: Path, card: SystemCard, run_id: str, retries: int) -> SystemTally:
    settings = RunSettings(run_id, concurrency=REPLICAS, retries=retries)
    return run_rollouts(workdir, [card], settings)[card.name]


def _traces(workdir: Path, card: SystemCard, run_id: str) -> list[dict[str, Any]]:
    """Every rollout's trace; fails on a rollout folder without one, or with an error."""
    folders = sorted((runs_dir(workdir) / run_id / "rollouts" / card.name).glob("*/*"))
    assert [f.name for f in folders] == ["0", "0"]
    assert not [f for f in folders if (f / "error.json").exists()]
    return [json.loads((f / "trace.json").read_text()) for f in folders]


def _replica_of(trace: dict[str, Any]) -> str:
    """The replica the rollout ran on, from its trace's ``pool`` signal."""
    (signal_,) = [o for o in trace["outputs"] if o["detail"].get("type") == "pool"]
    replica: str = signal_["detail"]["replica"]
    return replica


def _change(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    changed = {k: after[k] - before.get(k, 0) for k in after}
    return {k: n for k, n in changed.items() if n}


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command's name (None: no such process)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return None


def _ended(pid: int) -> Callable[[], bool | None]:
    """For :func:`until`: True once process ``pid`` has exited (gone, or a zombie)."""

    def ended() -> bool | None:
        stat = _stat(pid)
        return True if stat is None or stat[0] == "Z" else None

    return ended


def _replaced(pool: Pool, victim: Replica) -> Callable[[], PoolState | None]:
    """For :func:`until`: the registry once a new replica has taken ``victim``'s place."""

    def replaced() -> PoolState | None:
        state = pool.state()
        live = {r.endpoint for r in state.replicas}
        return state if len(live) == REPLICAS and victim.endpoint not in live else None

    return replaced


def _primed(replica: Replica) -> int:
    """Sessions whose history the replica's server has forced, from its log."""
    return Path(replica.log).read_text(errors="replace").count(" primed: ")


def test_a_pool_card_without_its_pool_says_how_to_serve_one(ray_local: Any) -> None:
    endpoint = "pool://nowhere/api/duplex"
    card = SystemCard("nowhere", "moshi-preloaded", Family.DUPLEX, endpoint=endpoint, frame_ms=80)
    with pytest.raises(PmcError, match=r"no duplex pool 'nowhere'.*--pool nowhere"):
        adapter_factory(card).prepare(card)


def test_sessions_run_at_once_on_distinct_replicas(
    pool: Pool, pause_points: Path, card: SystemCard, this_node: None
) -> None:
    before = pool.state()
    tally = _run(pause_points, card, "together", retries=0)
    assert (tally.done, tally.failed) == (2, 0), tally.causes
    traces = _traces(pause_points, card, "together")
    replicas = sorted(_replica_of(t) for t in traces)
    assert replicas == sorted(r.endpoint for r in before.replicas)
    spans = [(t["t0_ns"], t["t0_ns"] + t["protocol"]["stop_stream_s"] * 1e9) for t in traces]
    assert max(s for s, _ in spans) < min(e for _, e in spans), "the two streams overlapped"
    for trace in traces:
        kinds = {o["kind"] for o in trace["outputs"]}
        assert {"audio", "text"} <= kinds and trace["protocol"]["stop_reason"] == "drained"
    after = pool.state()
    assert _change(before.sessions, after.sessions) == dict.fromkeys(replicas, 1)
    assert after.busy == () and after.failed == before.failed


def test_a_replica_killed_mid_session_is_replaced_and_its_rollout_retried(
    pool: Pool, pause_points: Path, card: SystemCard, this_node: None
) -> None:
    before = pool.state()
    primed = {r.endpoint: _primed(r) for r in before.replicas}

    def streaming() -> Replica | None:
        state = pool.state()
        for replica in state.replicas:
            if replica.endpoint in state.busy and _primed(replica) > primed[replica.endpoint]:
                return replica
        return None

    def kill_a_streaming_server() -> Replica:
        victim = until("a session streaming on a replica", streaming)
        os.kill(victim.pid, signal.SIGKILL)
        return victim

    with ThreadPoolExecutor(max_workers=1) as killer:
        killed = killer.submit(kill_a_streaming_server)
        tally = _run(pause_points, card, "killed", retries=2)
        victim = killed.result(WAIT_S)

    # Every rollout is there once; none finished on the dead replica.
    assert (tally.done, tally.failed) == (2, 0), tally.causes
    traces = _traces(pause_points, card, "killed")
    assert victim.endpoint not in {_replica_of(t) for t in traces}

    after = until("a new replica in the registry", _replaced(pool, victim))
    new = {r.endpoint for r in after.replicas} - {r.endpoint for r in before.replicas}
    assert len(new) == 1 and victim.endpoint in after.gone
    # Three sessions for two rollouts: the one on the victim failed once, then ran elsewhere.
    served = _change(before.sessions, after.sessions)
    assert sum(served.values()) == 3 and served[victim.endpoint] == 1
    assert _change(before.failed, after.failed) == {victim.endpoint: 1}
    said = pool.output.read_text()
    assert f"{victim.endpoint} left the pool: its server exited (-9)" in said
    assert f"{new.pop()} (server pid" in said


def test_a_replica_whose_actor_dies_is_replaced_and_its_server_ends_with_it(pool: Pool) -> None:
    before = pool.state()
    victim = before.replicas[0]
    stat = _stat(victim.pid)
    assert stat is not None
    os.kill(int(stat[1]), signal.SIGKILL)  # the server's parent: the replica's Ray worker
    after = until("a new replica in the registry", _replaced(pool, victim))
    until(f"server {victim.pid} ended with its actor", _ended(victim.pid))
    assert victim.endpoint in after.gone and after.busy == ()
    assert f"{victim.endpoint} left the pool: its actor was lost" in pool.output.read_text()


def _hung(pool: Pool) -> str:
    """Where the command's threads and tasks are (SIGUSR1, SIGUSR2), then the command killed."""
    for dump in (signal.SIGUSR1, signal.SIGUSR2):
        before = len(pool.output.read_text())
        pool.process.send_signal(dump)

        def dumped(before: int = before) -> bool | None:
            return "File " in pool.output.read_text()[before:] or None

        with contextlib.suppress(pytest.fail.Exception):
            until(dump.name, dumped, 10)
    pool.process.kill()
    pool.process.wait()
    return pool.output.read_text()


def test_ctrl_c_stops_every_replica_and_the_registry(pool: Pool, ray_local: Any) -> None:
    state = pool.state()
    pool.process.send_signal(signal.SIGINT)
    try:
        code = pool.process.wait(WAIT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"Ctrl-C did not stop the pool in {WAIT_S:g} s:\n{_hung(pool)}")
    assert code == 0, pool.output.read_text()
    assert f"pool {POOL}: stopped" in pool.output.read_text()
    for replica in state.replicas:
        until(f"server {replica.pid} gone", _ended(replica.pid))
    until("the registry gone", lambda: True if _registry(ray_local) is None else None)
