"""A run killed with SIGKILL at random moments resumes to exactly the uninterrupted result."""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pmc.testing.points import write_points

SYSTEMS = Path(__file__).resolve().parents[2] / "systems"
NAMES = ("never-speak", "always-speak", "person", "shuffled-person")


def command(workdir: Path, run_id: str) -> list[str]:
    systems = [arg for name in NAMES for arg in ("--system", name)]
    return [
        sys.executable,
        "-m",
        "pmc",
        "run",
        "--workdir",
        str(workdir),
        "--systems-dir",
        str(SYSTEMS),
        *systems,
        "--rollouts",
        "3",
        "--run-id",
        run_id,
    ]


def files(run: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run)): p.read_bytes() for p in run.rglob("*") if p.is_file()}


@pytest.mark.slow
def test_sigkill_at_random_moments_then_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    write_points(tmp_path)
    subprocess.run(command(tmp_path, "whole"), check=True, capture_output=True)

    rng = random.Random(5)
    done = tmp_path / "runs" / "killed" / "rollouts"
    kills = 0
    for _ in range(5):
        before = len(list(done.rglob("trace.json")))
        proc = subprocess.Popen(
            command(tmp_path, "killed"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        # Once this attempt has finished a rollout, kill it a random moment later: mid-rollout,
        # mid-write or between the two.
        while proc.poll() is None and len(list(done.rglob("trace.json"))) <= before:
            time.sleep(0.02)
        time.sleep(rng.uniform(0.0, 0.4))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
    assert kills == 5, "the run finished before a kill; the test did not test anything"
    subprocess.run(command(tmp_path, "killed"), check=True, capture_output=True)

    whole = files(tmp_path / "runs" / "whole" / "rollouts")
    killed = files(tmp_path / "runs" / "killed" / "rollouts")
    assert len(whole) == len(NAMES) * 4 * 3 * 3  # systems x points x rollouts x files
    assert sorted(killed) == sorted(whole)  # nothing missing, nothing extra, no temporary file
    for name, data in whole.items():
        assert killed[name] == data, name
