"""``pmc run --ray`` and ``pmc score --ray`` on a local Ray cluster (two streaming processes).

What a Ray run must give is what a local run gives: the same run folder, byte for byte, for
systems on the virtual clock; the same scores. The driver keeps each card's concurrency limit
over every worker; a worker killed mid-rollout loses and duplicates nothing (its rollouts start
afresh on another worker). Kills are placed by progress: a held system waits, in a worker, for
the test to release it, and writes which process it waits in.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

import pmc.testing.systems  # noqa: F401 - registers the held system here; workers import it
from pmc import cluster
from pmc.errors import PmcError
from pmc.harness import RunSettings, SystemTally, run_rollouts, runs_dir
from pmc.scoring import ScoreSettings, ScoringCluster, run_scoring
from pmc.systems import load_card
from pmc.testing.agent import AgentBehaviour, fake_agent
from pmc.testing.points import write_points
from tests.harness.test_kill_resume import held_card
from tests.systems.conftest import card_at

pytestmark = pytest.mark.slow

SYSTEMS = Path(__file__).resolve().parents[2] / "systems"
VIRTUAL = ("never-speak", "always-speak", "person", "shuffled-person")
WORKERS = 2
STALL_S = 300.0
"""A held rollout not reached in 5 minutes means the run is stuck: fail, do not hang."""


@pytest.fixture(scope="module")
def ray_local() -> Iterator[None]:
    """A local Ray cluster of two CPUs for this module, stopped after it."""
    cluster.connect(None, num_cpus=WORKERS)
    yield
    cluster.disconnect()


def files(run: Path) -> dict[str, bytes]:
    """Every file of a run folder but run.json (which names the run), by relative path."""
    return {
        str(p.relative_to(run)): p.read_bytes()
        for p in sorted(run.rglob("*"))
        if p.is_file() and p.name != "run.json"
    }


def run_record(run: Path) -> dict[str, Any]:
    record: dict[str, Any] = json.loads((run / "run.json").read_text())
    record.pop("run_id")
    return record


@pytest.fixture(scope="module")
def both(ray_local: None, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The reference systems run here and on Ray, into two runs of the same points."""
    workdir = tmp_path_factory.mktemp("ray-same")
    write_points(workdir)
    cards = [load_card(SYSTEMS / f"{name}.toml") for name in VIRTUAL]
    run_rollouts(workdir, cards, RunSettings("here", retries=0))
    tallies = run_rollouts(workdir, cards, RunSettings("ray", retries=0, ray="auto"))
    assert {n: (t.done, t.failed) for n, t in tallies.items()} == {n: (4, 0) for n in VIRTUAL}
    return runs_dir(workdir) / "here", runs_dir(workdir) / "ray"


def test_a_ray_run_writes_the_same_run_folder_as_a_local_run(both: tuple[Path, Path]) -> None:
    here, on_ray = both
    local, remote = files(here), files(on_ray)
    assert len(local) == len(VIRTUAL) * 4 * 3  # trace.json, played.flac, output.wav each
    assert remote.keys() == local.keys()
    assert [name for name in local if local[name] != remote[name]] == []
    assert run_record(on_ray) == run_record(here)


def test_scoring_on_ray_writes_the_same_scores_as_local_scoring(both: tuple[Path, Path]) -> None:
    here, _ = both
    settings = ScoreSettings(asr="faster-whisper:tiny.en")
    run_scoring(here, settings, workers=1)
    local = {k: v for k, v in files(here).items() if k.startswith("scores/")}
    for path in (here / "scores").rglob("*.json*"):
        path.unlink()
    tallies = run_scoring(here, settings, cluster=ScoringCluster("auto"))
    assert sum(t.scored for t in tallies.values()) == len(VIRTUAL) * 4
    remote = {k: v for k, v in files(here).items() if k.startswith("scores/")}
    assert len(local) == len(VIRTUAL) * 4 + len(VIRTUAL)  # one per rollout, one jsonl each
    assert remote == local


def test_each_cards_concurrency_holds_over_every_worker(ray_local: None, tmp_path: Path) -> None:
    """Two real-time phone agents: never more calls open at once than each card allows."""
    workdir = tmp_path / "w"
    write_points(workdir)
    limits = {"agent-1": 1, "agent-2": 2}
    with ExitStack() as stack:
        agents, cards = {}, []
        for name, limit in limits.items():
            agents[name] = stack.enter_context(fake_agent(AgentBehaviour()))
            path = card_at("twilio-agent", agents[name].url, tmp_path / "cards", name)
            path.write_text(path.read_text().replace("concurrency = 1", f"concurrency = {limit}"))
            cards.append(load_card(path))
        settings = RunSettings("calls", retries=0, ray="auto", workers=WORKERS)
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
    ray_local: None, tmp_path: Path
) -> None:
    workdir = tmp_path / "w"
    points = write_points(workdir)
    release, waiting = tmp_path / "release", tmp_path / "waiting"
    held = load_card(held_card(tmp_path, release, waiting))
    cards = [load_card(SYSTEMS / "never-speak.toml"), held]
    thread, result = run_in_thread(workdir, cards, RunSettings("lost", retries=0, ray="auto"))
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
