"""A Ray node lost mid-run (its raylet and every process on it killed) loses and duplicates nothing.

Two nodes on this machine (Ray's own ``cluster_utils.Cluster``): the held system's card asks for
a resource only the second node has, so its rollouts stream there. Once a held rollout waits on
that node (placed by progress: it writes its process id), the node is removed, a new node with the
resource joins, as an autoscaler would bring one, and the held system is released.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pmc.testing.systems  # noqa: F401 - registers the held system here; workers import it
from pmc import cluster
from pmc.harness import RunSettings, run_rollouts, runs_dir
from pmc.systems import load_card
from pmc.testing.points import write_points
from tests.harness.test_kill_resume import held_card
from tests.harness.test_ray import STALL_S, run_in_thread, wait_until_held

pytestmark = pytest.mark.slow

SYSTEMS = Path(__file__).resolve().parents[2] / "systems"
STORE_BYTES = 200 * 2**20
"""Each node's object store (Ray's default claims 30% of the machine's memory per node)."""
RESOURCE = "held-node"


@pytest.fixture
def two_nodes() -> Iterator[Any]:
    ray = cluster.ray_module()
    from ray.cluster_utils import Cluster

    nodes = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "object_store_memory": STORE_BYTES},
    )
    nodes.add_node(num_cpus=1, resources={RESOURCE: 1}, object_store_memory=STORE_BYTES)
    cluster.connect(nodes.address)
    yield nodes
    ray.shutdown()
    nodes.shutdown()  # type: ignore[no-untyped-call]


def test_a_node_lost_mid_rollout_loses_and_duplicates_nothing(
    two_nodes: Any, tmp_path: Path
) -> None:
    workdir = tmp_path / "w"
    points = write_points(workdir)
    release, waiting = tmp_path / "release", tmp_path / "waiting"
    path = held_card(tmp_path, release, waiting)
    text = path.read_text().replace(
        "[params]\n", f'[params]\nray_resources = {{"{RESOURCE}" = 1}}\n'
    )
    path.write_text(text)
    cards = [load_card(SYSTEMS / "never-speak.toml"), load_card(path)]
    settings = RunSettings("lost", retries=0, ray=two_nodes.address)
    thread, result = run_in_thread(workdir, cards, settings)
    wait_until_held(waiting, thread)
    held_node = next(n for n in two_nodes.worker_nodes)
    two_nodes.remove_node(held_node)  # its raylet and every worker on it
    two_nodes.add_node(num_cpus=1, resources={RESOURCE: 1}, object_store_memory=STORE_BYTES)
    release.touch()
    thread.join(STALL_S)
    assert not thread.is_alive()
    tallies = result["tallies"]
    assert {n: (t.done, t.failed) for n, t in tallies.items()} == {
        "never-speak": (len(points), 0),
        "held": (len(points), 0),
    }
    assert tallies["held"].retry_reasons == {"worker_lost": 1}
    run = runs_dir(workdir) / "lost"
    for system in ("never-speak", "held"):
        folders = sorted((run / "rollouts" / system).glob("*/*"))
        assert len(folders) == len(points)
        for folder in folders:
            names = sorted(p.name for p in folder.iterdir())
            assert names == ["output.wav", "played.flac", "trace.json"], folder
    # Both cards are on the virtual clock: the run equals one that nothing interrupted.
    run_rollouts(workdir, cards, RunSettings("whole", retries=0))
    assert files(run) == files(runs_dir(workdir) / "whole")


def files(run: Path) -> dict[str, bytes]:
    """A run's rollout files by relative path."""
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.glob("rollouts/**/*.*"))}
