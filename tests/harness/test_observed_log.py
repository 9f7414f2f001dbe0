"""A run killed while rollouts wait out their backoff keeps what it observed, counted once.

The killed invocation runs in a child process: a ``limited`` card whose first two sessions are
refused (their backoff is an hour, so the retries are in flight when the kill comes) and a
``held`` card that cannot finish, so the kill, placed by progress (the held rollout waiting and
the retries logged), always lands mid-run. The resume runs in this process with nothing refused.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from pmc import io
from pmc.harness import Backoff, Run, RunSettings, rollout_seed, run_rollouts, runs_dir
from pmc.harness._observations import fold_observations, read_observation_log
from pmc.systems import Family, SystemCard
from pmc.testing.points import write_points
from pmc.testing.systems import LimitedSystem, RateLimiter

LIMITED = "limited-kill"
HOUR = Backoff(base_s=3600.0, cap_s=3600.0)
"""A retry waits half an hour at least: still waiting when the kill comes, on any machine."""
RETRY_AFTER_S = 0.05
STALL_S = 60.0
"""The child imports pmc and runs a few virtual-clock rollouts: seconds, not a minute."""
POLL_S = 0.01
ROOT = Path(__file__).resolve().parents[2]


def cards(tmp: Path) -> list[SystemCard]:
    """The limited card, and a held one that waits for ``tmp/release``."""
    held = {"release": str(tmp / "release"), "waiting": str(tmp / "waiting")}
    return [
        SystemCard(LIMITED, "limited", Family.LOCAL, concurrency=4, preload_timeout_s=20.0),
        SystemCard("held", "held", Family.LOCAL, params=held, preload_timeout_s=86_400.0),
    ]


def child(workdir: str) -> None:
    """The invocation to kill: two sessions refused, each retry an hour away."""
    import pmc.testing.systems as fakes

    fakes.LimitedSystem.limiter = fakes.RateLimiter(0, 2, RETRY_AFTER_S)
    run_rollouts(Path(workdir), cards(Path(workdir)), RunSettings("killed", backoff=HOUR))


def retry_lines(run: Run) -> list[float]:
    return [o.waited_s for _, _, o in read_observation_log(run.observation_log) if o.retried]


def test_a_killed_run_keeps_its_observations_and_counts_each_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    points = write_points(tmp_path)
    run = Run(runs_dir(tmp_path) / "killed")
    code = f"from tests.harness.test_observed_log import child; child({str(tmp_path)!r})"
    log = tmp_path / "child.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + STALL_S
        while not ((tmp_path / "waiting").exists() and len(retry_lines(run)) == 2):
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(POLL_S)
    finally:
        proc.kill()
        proc.wait()
    # Killed with both retries waiting: run.json has nothing yet, the log has it all.
    assert "observed" not in io.read_json(run.record_path)
    waits = retry_lines(run)
    seeds = [rollout_seed(0, LIMITED, p.point_id, 0) for p in points]
    possible = {HOUR.wait_s(1, seed, RETRY_AFTER_S) for seed in seeds}
    assert set(waits) <= possible

    (tmp_path / "release").touch()
    monkeypatch.setattr(LimitedSystem, "limiter", RateLimiter(0, 0))
    tallies = run_rollouts(tmp_path, cards(tmp_path), RunSettings("killed"))
    assert tallies[LIMITED].done == len(points) - tallies[LIMITED].kept
    assert tallies[LIMITED].retried == 0  # nothing refused this time
    event, field = LimitedSystem.UNKNOWN_EVENT, LimitedSystem.UNKNOWN_FIELD
    observed = {
        LIMITED: {
            "retried": 2,
            "retry_reasons": {"rate_limited": 2},
            "waited_s": round(sum(waits), 3),
            "lowest_concurrency": 2,
            "unknown": {f"event {event}": len(points), f"field {field}": len(points)},
        }
    }
    record = io.read_json(run.record_path)
    assert record["observed"] == observed
    assert "observed_folded" not in record
    assert not run.observation_log.exists()


def test_a_kill_between_folding_and_removing_the_log_counts_nothing_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_points(tmp_path)
    monkeypatch.setattr(LimitedSystem, "limiter", RateLimiter(0, 1, RETRY_AFTER_S))
    fast = Backoff(base_s=0.01, cap_s=0.01)
    run_rollouts(tmp_path, cards(tmp_path)[:1], RunSettings("fold", backoff=fast))
    run = Run(runs_dir(tmp_path) / "fold")
    once = io.read_json(run.record_path)
    assert once["observed"][LIMITED]["retried"] == 1
    # The state a kill leaves after run.json is rewritten and before the log is removed.
    lines = [
        {"invocation": "a", "system": LIMITED, **once["observed"][LIMITED]},
        {"invocation": "a", "system": LIMITED, **once["observed"][LIMITED]},
    ]
    run.observation_log.write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"torn', "utf-8")
    record = replace(Run(run.folder).record, folded=("a",))
    io.write_json(run.record_path, record.to_dict())
    folded = fold_observations(run)
    assert io.read_json(run.record_path) == once
    assert folded.folded == () and not run.observation_log.exists()
    # The same lines from an invocation not yet folded are added, once.
    run.observation_log.write_text("".join(json.dumps(x) + "\n" for x in lines[:1]), "utf-8")
    twice = fold_observations(run).observed[LIMITED]
    doubled = {name: 2 * n for name, n in once["observed"][LIMITED]["unknown"].items()}
    assert (twice.retried, twice.unknown) == (2, doubled)
