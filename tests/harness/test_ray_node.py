"""A Ray node lost mid-run (its raylet and every process on it killed) loses and duplicates nothing.

The package's two local nodes and a third that joins for this test: the held system's card asks
for a resource only the third node has, so its rollouts stream there. Once a held rollout waits
on that node (placed by progress: it writes its process id), the node is removed, a new node with
the resource joins, as an autoscaler would bring one, and the held system is released.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import pmc.testing.systems  # noqa: F401 - registers the held system here; workers import it
from pmc.harness import RunSettings, run_rollouts, runs_dir
from pmc.systems import bundled_cards, load_card
from pmc.testing.points import write_points
from tests.harness.ray_nodes import TwoNodes
from tests.harness.test_kill_resume import held_card
from tests.harness.test_ray import STALL_S, run_in_thread, wait_until_held

pytestmark = pytest.mark.slow

SYSTEMS = bundled_cards()
RESOURCE = "held-node"


def test_a_node_lost_mid_rollout_loses_and_duplicates_nothing(
    ray_nodes: TwoNodes, tmp_path: Path
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
    held_node = ray_nodes.add_node(num_cpus=0, resources={RESOURCE: 1})
    settings = RunSettings("lost", retries=0, ray=ray_nodes.address)
    thread, result = run_in_thread(workdir, cards, settings)
    wait_until_held(waiting, thread)
    ray_nodes.remove_node(held_node)  # its raylet and every worker on it
    # A new node with the resource joins, as an autoscaler would bring one.
    replacement = ray_nodes.add_node(num_cpus=0, resources={RESOURCE: 1})
    release.touch()
    thread.join(STALL_S)
    ray_nodes.remove_node(replacement)  # the package's other tests find two nodes again
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
