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
        "2",
        "--run-id",
        run_id,
    ]


def files(run: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run)): p.read_bytes() for p in run.rglob("*") if p.is_file()}


@pytest.mark.slow
def test_sigkill_at_random_moments_then_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    write_points(tmp_path)
    started = time.monotonic()
    subprocess.run(command(tmp_path, "whole"), check=True, capture_output=True)
    whole_s = time.monotonic() - started

    rng = random.Random(5)
    kills = 0
    for _ in range(5):
        proc = subprocess.Popen(
            command(tmp_path, "killed"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        time.sleep(rng.uniform(0.3, whole_s))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
    assert kills >= 3, "the run finished before most kills; the test did not test anything"
    subprocess.run(command(tmp_path, "killed"), check=True, capture_output=True)

    whole = files(tmp_path / "runs" / "whole" / "rollouts")
    killed = files(tmp_path / "runs" / "killed" / "rollouts")
    assert len(whole) == len(NAMES) * 4 * 2 * 3  # systems x points x rollouts x files
    assert sorted(killed) == sorted(whole)  # nothing missing, nothing extra, no temporary file
    for name, data in whole.items():
        assert killed[name] == data, name
