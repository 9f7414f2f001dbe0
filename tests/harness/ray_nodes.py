"""A local Ray cluster of two nodes, started by the tests and stopped by process id.

Ray's own ``cluster_utils.Cluster`` starts each node's processes (GCS, raylet, monitors) from
this process; the node's workers are the raylet's children. Every process the nodes ever had
is noted (each node's own when it joins, their descendants whenever a node leaves and at the
end) and, after Ray's own shutdown, any that still runs is killed by its id, so the suite
leaves nothing behind. Nothing leaves this machine (Ray binds the host's own address; asking it
for 127.0.0.1 leaves the head announcing the host's address, which then cannot be reached), a
short temporary folder of its own (socket paths must stay under 108 bytes) that is also Ray's
default folder while the cluster runs (``RAY_TMPDIR``: Ray's ``Cluster`` writes its address
file there without making the folder, so on a machine where Ray never ran the default
``$TMPDIR/ray`` is missing and the start fails),
``RAY_AUTH_MODE=disabled`` (set by :mod:`pmc.cluster`), no dashboard, and a bounded object store
per node.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pmc import cluster
from pmc.cpu import default_slices

STORE_BYTES = 200 * 2**20
"""Each node's object store (Ray's default claims 30% of the machine's memory per node)."""
STOP_S = 60.0
"""A process still running this long after its kill fails the fixture."""


def _children() -> dict[int, list[int]]:
    """Every process's children, by parent id (from Linux's ``/proc``)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # ended while we looked
        children.setdefault(parent, []).append(int(entry))
    return children


def descendants(pids: set[int]) -> set[int]:
    """``pids`` and every process below them."""
    children, found, todo = _children(), set(pids), list(pids)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def running(pid: int) -> bool:
    """The process exists and is not a zombie waiting to be reaped."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@dataclass
class TwoNodes:
    """The cluster: a head node and a worker node, one CPU each, and the processes they had."""

    nodes: Any
    """Ray's ``cluster_utils.Cluster``."""
    pids: set[int] = field(default_factory=set)

    @property
    def address(self) -> str:
        return str(self.nodes.address)

    def add_node(self, **options: Any) -> Any:
        """A node of one CPU (``options`` override), its processes noted."""
        with default_slices():
            node = self.nodes.add_node(
                **{
                    "num_cpus": 1,
                    "object_store_memory": STORE_BYTES,
                    **options,
                }
            )
        self._note(node)
        return node

    def remove_node(self, node: Any) -> None:
        """Remove ``node`` (its raylet and every process on it)."""
        self._note(node)
        self.nodes.remove_node(node)

    def _note(self, node: Any) -> None:
        own = {info.process.pid for infos in node.all_processes.values() for info in infos}
        self.pids |= descendants(own)


@contextlib.contextmanager
def _own_folder() -> Iterator[str]:
    """A new short folder, Ray's default folder (``RAY_TMPDIR``) until the block ends."""
    # mkdtemp's name is as long as this one, so its sockets fit where this one's would.
    parent = os.path.dirname(cluster.short_folder("pmc-ray-XXXXXXXX"))
    temp = tempfile.mkdtemp(prefix="pmc-ray-", dir=parent)
    os.mkdir(os.path.join(temp, "ray"))  # where Cluster writes ray_current_cluster
    before = os.environ.get("RAY_TMPDIR")
    os.environ["RAY_TMPDIR"] = temp
    try:
        yield temp
    finally:
        if before is None:
            os.environ.pop("RAY_TMPDIR", None)
        else:
            os.environ["RAY_TMPDIR"] = before
        shutil.rmtree(temp, ignore_errors=True)


@contextlib.contextmanager
def two_nodes() -> Iterator[TwoNodes]:
    """Start the cluster and connect this process to it; stop every process at the end."""
    ray = cluster.ray_module()
    from ray.cluster_utils import Cluster

    with _own_folder() as temp:
        head = {
            "num_cpus": 1,
            "object_store_memory": STORE_BYTES,
            "temp_dir": temp,
            "include_dashboard": False,
        }
        with default_slices():  # Ray's processes stream rollouts: the default slice (pmc.cpu)
            started = TwoNodes(Cluster(initialize_head=True, head_node_args=head))
        try:
            started._note(started.nodes.head_node)
            started.add_node()
            cluster.connect(started.address)
            yield started
        finally:
            for node in [started.nodes.head_node, *started.nodes.worker_nodes]:
                if node is not None:
                    started._note(node)
            ray.shutdown()
            started.nodes.shutdown()
            stop(started.pids)


def stop(pids: set[int]) -> None:
    """Kill each of ``pids`` still running, and wait until none runs."""
    for pid in pids:
        if running(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + STOP_S
    while left := sorted(p for p in pids if running(p)):
        if time.monotonic() > deadline:
            raise AssertionError(f"Ray processes still running after SIGKILL: {left}")
        time.sleep(0.05)
