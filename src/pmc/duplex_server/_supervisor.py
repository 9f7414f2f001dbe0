"""The duplex server as a pool of replicas on Ray, supervised (``pmc serve-duplex --ray``).

Each replica is a Ray actor (:class:`DuplexReplica`) that runs the server as a child process on
a free port of its node and reports ``ws://<node ip>:<port>``. This process keeps the pool's
registry (:class:`pmc.duplex_server.PoolRegistry`, a detached named actor that cards reach through
``pool://NAME/...``), prints the endpoints and stays in the foreground: a replica whose server
or actor dies leaves the registry and a new one takes its place, and a replica a session failed
on is checked before it serves again. Ctrl-C stops every replica and the registry
(docs/scaling.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pmc import cluster
from pmc.cpu import default_slices
from pmc.duplex_server._launch import server_env, server_python
from pmc.duplex_server._pool import (
    POOL_NAMESPACE,
    PoolRegistry,
    PoolState,
    Replica,
    pool_actor_name,
)
from pmc.errors import PmcError

REPLICA_CPUS = 1
"""Each replica's CPU reservation: the server's event loop and its model's one torch thread
(the server's ``--threads`` default)."""
START_TIMEOUT_S = 900.0
"""A replica's server must listen within this: a 7B model's weights read from a cold disk or
fetched into the hub cache take minutes."""
CHECK_TIMEOUT_S = 10.0
"""A replica a session failed on must accept a connection within this (websockets' own open
timeout, which the clients use too)."""
LISTEN_POLL_S = 0.1
"""How often a starting server is asked whether it listens (it loads its model first)."""
STOP_TIMEOUT_S = 10.0
"""A server gets this long to exit on SIGTERM before it is killed."""
RESTART_WAIT_S = 5.0
"""Wait before trying again a replacement that failed to start (a GPU a dead server held may
take a moment to be freed)."""
LOG_TAIL_LINES = 20
"""Lines of a server's log quoted when it fails to start."""
WILDCARD = "0.0.0.0"
"""Replicas listen on every interface of their node: clients reach them by the node's IP."""

DIE_WITH_PARENT = """
import ctypes, os, runpy, signal, sys
parent = int(sys.argv.pop(1))
if sys.platform.startswith("linux"):
    ctypes.CDLL(None).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG: SIGTERM when the actor dies
if os.getppid() != parent:
    sys.exit("the replica that started this server is gone")
runpy.run_module("pmc.duplex_server", run_name="__main__", alter_sys=True)
"""
"""``python -c`` program: ``python -m pmc.duplex_server``, ending with its replica's process.
A killed Ray actor leaves its children behind (holding a GPU); ``preexec_fn`` could set the same
in the child, but is unsafe in a process with threads, as a Ray worker is."""


def _free_port() -> int:
    """A TCP port free on every interface of this node right now."""
    with socket.socket() as s:
        s.bind((WILDCARD, 0))
        return int(s.getsockname()[1])


async def _listens(host: str, port: int, timeout_s: float) -> bool:
    """Whether ``host:port`` accepts a TCP connection within ``timeout_s``."""
    try:
        async with asyncio.timeout(timeout_s):
            _, writer = await asyncio.open_connection(host, port)
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


def _spawn(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    """Start ``argv`` with its output in ``log``.

    Called on the replica's event-loop thread, which lives as long as the actor:
    PR_SET_PDEATHSIG fires when the thread that started the child ends, not its process.
    """
    with log.open("wb") as sink, default_slices():  # a real-time server
        return subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, env=server_env())


def _tail(log: Path) -> str:
    lines = log.read_text(errors="replace").splitlines()
    return "\n".join(lines[-LOG_TAIL_LINES:])


class DuplexReplica:
    """One server of a pool (a Ray actor): the server as a child process on a free port.

    The server's output goes to a log file in its node's temporary folder, kept after it stops.
    """

    def __init__(self, server_args: Sequence[str]) -> None:
        self._args = list(server_args)
        self._process: subprocess.Popen[bytes] | None = None
        self._port = 0

    async def start(self) -> Replica:
        """Start the server and wait until it listens.

        Raises:
            PmcError: It exited, or did not listen in :data:`START_TIMEOUT_S`; with its log.
        """
        node = cluster.ray_module().util.get_node_ip_address()
        self._port = _free_port()
        handle, name = tempfile.mkstemp(prefix="pmc-duplex-", suffix=".log")
        os.close(handle)
        log = Path(name)
        args = ["serve", *self._args, "--host", WILDCARD, "--port", str(self._port)]
        argv = [server_python(), "-c", DIE_WITH_PARENT, str(os.getpid()), *args, "--instances", "1"]
        self._process = _spawn(argv, log)
        deadline = asyncio.get_running_loop().time() + START_TIMEOUT_S
        while not await _listens("127.0.0.1", self._port, LISTEN_POLL_S):
            if self._process.poll() is not None:
                raise PmcError(
                    f"the server on {node} exited ({self._process.returncode}) before it "
                    f"listened; {log}:\n{_tail(log)}"
                )
            if asyncio.get_running_loop().time() > deadline:
                await self.stop()
                raise PmcError(f"the server on {node} did not listen in {START_TIMEOUT_S:g} s")
            await asyncio.sleep(LISTEN_POLL_S)
        return Replica(f"ws://{node}:{self._port}", node, self._process.pid, str(log))

    async def watch(self) -> int:
        """Wait until the server exits; its exit status (negative: the signal that ended it)."""
        if self._process is None:
            raise PmcError("the replica was not started")
        return await asyncio.to_thread(self._process.wait)

    async def check(self) -> bool:
        """Whether the server still runs and accepts a connection."""
        if self._process is None or self._process.poll() is not None:
            return False
        return await _listens("127.0.0.1", self._port, CHECK_TIMEOUT_S)

    async def stop(self) -> None:
        """Stop the server: SIGTERM, then SIGKILL after :data:`STOP_TIMEOUT_S`."""
        process = self._process
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            await asyncio.to_thread(process.wait, STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            await asyncio.to_thread(process.wait)


@dataclass(frozen=True)
class PoolSpec:
    """What to serve.

    Attributes:
        pool: The pool's name (cards say ``pool://NAME/...``).
        replicas: How many servers.
        gpus: GPUs each replica takes (0: on CPU).
        server_args: The server's options, without ``--host``, ``--port`` and ``--instances``.
    """

    pool: str
    replicas: int
    gpus: float
    server_args: tuple[str, ...]


class _Slot:
    """One place in the pool, held by one replica after another."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.handle: Any = None
        self.replica: Replica | None = None


class Supervisor:
    """Keeps ``spec.replicas`` replicas running and the registry up to date, until cancelled."""

    def __init__(self, ray: Any, spec: PoolSpec, say: Callable[[str], None]) -> None:
        self._ray = ray
        self._spec = spec
        self._say = say
        self._remote = ray.remote(DuplexReplica)
        self._slots = [_Slot(i + 1) for i in range(spec.replicas)]
        self._registry: Any = None

    async def run(self) -> None:
        """Start the registry and the replicas, then replace any that dies; stop all at the end.

        Raises:
            PmcError: The pool cannot be served (its name is taken, a replica fits no node, a
                first replica did not start).
        """
        self._check_fits()
        asyncio.get_running_loop().add_signal_handler(signal.SIGUSR2, _print_tasks)
        self._registry = await self._open_registry()
        try:
            await self._all(self._fill(slot) for slot in self._slots)
            self._say(
                f"pool {self._spec.pool}: {len(self._slots)} replica(s) serving; cards name it "
                f'with endpoint = "pool://{self._spec.pool}/api/duplex". Ctrl-C stops them.'
            )
            await self._all([*(self._keep(slot) for slot in self._slots), self._check_failed()])
        finally:
            await self._stop()

    @staticmethod
    async def _all(work: Any) -> None:
        """Run coroutines together; the first failure cancels the others and is raised."""
        tasks = [asyncio.ensure_future(w) for w in work]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def _check_fits(self) -> None:
        """A replica that fits no node would wait for one forever: say so now."""
        nodes = [n["Resources"] for n in self._ray.nodes() if n.get("Alive")]
        if not any(
            r.get("GPU", 0) >= self._spec.gpus and r.get("CPU", 0) >= REPLICA_CPUS for r in nodes
        ):
            raise PmcError(
                f"no node of the Ray cluster has {self._spec.gpus:g} GPU(s) and {REPLICA_CPUS} "
                "CPU for a replica (--gpus-per-replica 0 serves on CPU)"
            )

    async def _open_registry(self) -> Any:
        """The pool's registry: a new one, or a stale one taken over (its servers are gone).

        Raises:
            PmcError: A pool of that name is served by another command now.
        """
        name = pool_actor_name(self._spec.pool)
        try:
            existing = self._ray.get_actor(name, namespace=POOL_NAMESPACE)
        except ValueError:
            return (
                self._ray.remote(PoolRegistry)
                .options(
                    name=name,
                    namespace=POOL_NAMESPACE,
                    lifetime="detached",  # any driver on the cluster finds it by name
                    num_cpus=0,  # bookkeeping only
                    max_restarts=0,
                )
                .remote()
            )
        state: PoolState = await existing.state.remote()
        for replica in state.replicas:
            host, port = replica.endpoint.removeprefix("ws://").rsplit(":", 1)
            if await _listens(host, int(port), CHECK_TIMEOUT_S):
                raise PmcError(
                    f"pool {self._spec.pool} is served already ({replica.endpoint}): stop that "
                    "`pmc serve-duplex`, or name another pool with --pool"
                )
        await existing.reset.remote()
        self._say(f"pool {self._spec.pool}: taking over its registry (its servers are gone)")
        return existing

    async def _fill(self, slot: _Slot) -> None:
        """Start a replica in ``slot`` and add it to the registry.

        Raises:
            PmcError: It did not start (its actor is gone again).
        """
        options = {"num_cpus": REPLICA_CPUS, "num_gpus": self._spec.gpus, "max_restarts": 0}
        slot.handle = self._remote.options(**options).remote(self._spec.server_args)
        try:
            replica: Replica = await slot.handle.start.remote()
        except self._ray.exceptions.RayError as exc:
            self._kill(slot)
            cause = getattr(exc, "cause", None) or exc
            raise PmcError(f"replica {slot.index} did not start: {cause}") from None
        slot.replica = replica
        await self._registry.add.remote(replica)
        self._say(
            f"replica {slot.index}: {replica.endpoint} (server pid {replica.pid}, "
            f"log {replica.log} on {replica.node})"
        )

    async def _keep(self, slot: _Slot) -> None:
        """Replace the replica in ``slot`` whenever it dies."""
        while True:
            try:
                status = await slot.handle.watch.remote()
                why = f"its server exited ({status})"
            except self._ray.exceptions.RayError as exc:
                why = f"its actor was lost ({type(exc).__name__})"
            gone, slot.replica = slot.replica, None
            if gone is not None:
                await self._registry.remove.remote(gone.endpoint)
                self._say(f"replica {slot.index}: {gone.endpoint} left the pool: {why}")
            self._kill(slot)
            while True:
                try:
                    await self._fill(slot)
                    break
                except PmcError as exc:
                    self._say(f"{exc}; trying again in {RESTART_WAIT_S:g} s")
                    await asyncio.sleep(RESTART_WAIT_S)

    async def _check_failed(self) -> None:
        """Check each replica a session failed on: back into the pool, or replaced."""
        while True:
            endpoint = await self._registry.next_suspect.remote()
            held = [s for s in self._slots if s.replica and s.replica.endpoint == endpoint]
            if not held:
                continue  # replaced meanwhile
            slot = held[0]
            handle = slot.handle
            try:
                async with asyncio.timeout(CHECK_TIMEOUT_S * 2):  # the check's own, and Ray's
                    healthy = bool(await handle.check.remote())
            except (TimeoutError, self._ray.exceptions.RayError):
                healthy = False
            if healthy:
                await self._registry.restore.remote(endpoint)
            elif slot.handle is handle:  # not replaced while it was checked
                self._kill(slot)  # its watch then fails, and _keep replaces it

    def _kill(self, slot: _Slot) -> None:
        """End the actor in ``slot`` (its server ends with it)."""
        if slot.handle is not None:
            with contextlib.suppress(Exception):
                self._ray.kill(slot.handle)
            slot.handle = None

    async def _stop(self) -> None:
        """Stop every server, then the actors and the registry."""
        handles = [s.handle for s in self._slots if s.handle is not None]
        with contextlib.suppress(Exception):
            async with asyncio.timeout(STOP_TIMEOUT_S * 2):  # SIGTERM's wait, then SIGKILL's
                await asyncio.gather(*(h.stop.remote() for h in handles), return_exceptions=True)
        for slot in self._slots:
            self._kill(slot)
        if self._registry is not None:
            with contextlib.suppress(Exception):
                self._ray.kill(self._registry)


def _print_tasks() -> None:
    """Print where every asyncio task of the supervisor waits (on SIGUSR2), for a stuck stop."""
    for task in asyncio.all_tasks():
        task.print_stack(file=sys.stderr)
    sys.stderr.flush()


def serve_pool(address: str, spec: PoolSpec, say: Callable[[str], None] = print) -> None:
    """Serve ``spec`` on the Ray cluster at ``address`` until Ctrl-C, telling ``say`` as it goes.

    SIGUSR1 prints where every thread is to standard error, and SIGUSR2 where every asyncio
    task waits, for a stop that does not end.
    """
    # A process started in the background by a non-interactive shell (as `make test &` runs
    # the suite) inherits SIGINT ignored, and Python then leaves it ignored: the promised
    # Ctrl-C, or `kill -INT`, would do nothing. Take it back, so that asyncio's runner handles it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    ray = cluster.connect(address)
    try:
        asyncio.run(Supervisor(ray, spec, say).run())
    except KeyboardInterrupt:
        say(f"pool {spec.pool}: stopped")
    finally:
        cluster.disconnect()
