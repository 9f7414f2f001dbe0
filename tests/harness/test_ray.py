"""``pmc run --ray`` on a local Ray cluster of two nodes: limits and a lost worker.

The driver keeps each card's concurrency limit over every worker; a worker killed mid-rollout
loses and duplicates nothing (its rollouts start afresh on another worker). Kills are placed by
progress: a held system waits, in a worker, for the test to release it, and writes which
process it waits in. (That a Ray run's folder and scores equal a local run's is
``test_ray_demo``'s.)
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

import pmc.testing.systems  # noqa: F401 - registers the held system here; workers import it
from pmc import cluster
from pmc.errors import PmcError
from pmc.harness import RunSettings, SystemTally, run_rollouts, runs_dir
from pmc.systems import bundled_cards, load_card
from pmc.testing.agent import AgentBehaviour, fake_agent
from pmc.testing.points import write_points
from tests.harness.ray_nodes import TwoNodes
from tests.harness.test_kill_resume import held_card
from tests.systems.conftest import card_at

pytestmark = pytest.mark.slow

SYSTEMS = bundled_cards()
VIRTUAL = ("never-speak", "always-speak", "person", "shuffled-person")
WORKERS = 2
STALL_S = 300.0
"""A held rollout not reached in 5 minutes means the run is stuck: fail, do not hang."""


def test_each_cards_concurrency_holds_over_every_worker(
    ray_nodes: TwoNodes, tmp_path: Path
) -> None:
    """Two real-time phone agents: never more calls open at once than each card allows."""
    workdir = tmp_path / "w"
    write_points(workdir)
    limits = {"agent-1": 2, "agent-2": 3}
    with ExitStack() as stack:
        agents, cards = {}, []
        for name, limit in limits.items():
            agents[name] = stack.enter_context(fake_agent(AgentBehaviour()))
            path = card_at("twilio-agent", agents[name].url, tmp_path / "cards", name)
            path.write_text(path.read_text().replace("concurrency = 1", f"concurrency = {limit}"))
            cards.append(load_card(path))
        settings = RunSettings("calls", retries=0, ray=ray_nodes.address, workers=WORKERS)
        tallies = run_rollouts(workdir, cards, settings)
    assert {n: (t.done, t.failed) for n, t in tallies.items()} == {n: (4, 0) for n in limits}
    for name, agent in agents.items():
        assert len(agent.calls) == 4
        assert all(call.problems == [] and call.onsets_s for call in agent.calls)
        assert agent.peak_calls == limits[name], name


def run_in_thread(
    workdir: Path, cards: list[Any], settings: RunSettings
) -> tuple[threading.Thread, dict[str, dict[str, SystemTally]]]:
    """Start the run in a thread; its tallies land in the dict under ``tallies``."""
    result: dict[str, dict[str, SystemTally]] = {}

    def main() -> None:
        result["tallies"] = run_rollouts(workdir, cards, settings)

    thread = threading.Thread(target=main, daemon=True)
    thread.start()
    return thread, result


def wait_until_held(waiting: Path, thread: threading.Thread) -> int:
    """Wait (by progress) until a held rollout waits; the id of the process it waits in."""
    deadline = time.monotonic() + STALL_S
    while not waiting.exists() or not waiting.read_text():
        assert thread.is_alive(), "the run ended before the held system waited"
        assert time.monotonic() < deadline, "the run never reached the held system"
        time.sleep(0.01)
    return int(waiting.read_text())


def test_a_worker_killed_mid_rollout_loses_and_duplicates_nothing(
    ray_nodes: TwoNodes, tmp_path: Path
) -> None:
    workdir = tmp_path / "w"
    points = write_points(workdir)
    release, waiting = tmp_path / "release", tmp_path / "waiting"
    held = load_card(held_card(tmp_path, release, waiting))
    cards = [load_card(SYSTEMS / "never-speak.toml"), held]
    settings = RunSettings("lost", retries=0, ray=ray_nodes.address)
    thread, result = run_in_thread(workdir, cards, settings)
    worker = wait_until_held(waiting, thread)
    assert worker != os.getpid()  # it waits in a Ray worker, not here
    os.kill(worker, signal.SIGKILL)
    release.touch()
    thread.join(STALL_S)
    assert not thread.is_alive()
    tallies = result["tallies"]
    assert {n: (t.done, t.failed) for n, t in tallies.items()} == {
        "never-speak": (len(points), 0),
        "held": (len(points), 0),
    }
    assert tallies["held"].retry_reasons.get("worker_lost", 0) >= 1
    run = runs_dir(workdir) / "lost"
    # Every rollout once, whole: its three files and nothing else (no error.json, no temporary).
    for system in ("never-speak", "held"):
        folders = sorted((run / "rollouts" / system).glob("*/*"))
        assert len(folders) == len(points)
        for folder in folders:
            assert sorted(p.name for p in folder.iterdir()) == [
                "output.wav",
                "played.flac",
                "trace.json",
            ]
    observed = json.loads((run / "run.json").read_text())["observed"]
    assert observed["held"]["retry_reasons"]["worker_lost"] >= 1


def test_without_ray_the_option_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(PmcError, match=r"pip install 'pmc\[ray\]'"):
        cluster.ray_module()
