"""A run killed with SIGKILL mid-way, five times, resumes to exactly the uninterrupted result.

Kills are placed by progress, not by wall-clock luck: each attempt is killed a moment after it
has finished a chosen number of rollouts. The run also holds a system whose rollouts cannot
finish until the test releases it (adapter ``held``, :mod:`pmc.testing.systems`), so no machine,
however fast, finishes the run before a kill, and the last kill lands while that system waits.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pmc.systems import bundled_cards
from pmc.testing.points import write_points

SYSTEMS = bundled_cards()
NAMES = ("never-speak", "always-speak", "person", "shuffled-person")
HELD = "held"
ROLLOUTS = 3
FILES_PER_ROLLOUT = 3
"""trace.json, played.flac and output.wav."""
KILLS = 5
JITTER_S = 0.03
"""A kill comes up to 30 ms after its progress point: about one reference rollout on the virtual
clock (10-40 ms each on a 2-core machine), so kills land mid-rollout, mid-write or between two."""
STALL_S = 300.0
"""An attempt that neither finishes a rollout nor reaches the held system in 5 minutes is stuck
(a rollout takes milliseconds, startup seconds): the test fails instead of hanging."""
POLL_S = 0.005
HOLD_S = 86_400
"""The held card's connect limit: a day, longer than any test runs, so holding never times out."""
PMC = "import pmc.testing.systems; from pmc.cli import main; main()"
"""The ``pmc`` command line with the test systems registered (the held one lives there)."""


def held_card(folder: Path, release: Path, waiting: Path) -> Path:
    """A card for the held system; it says nothing, like never-speak."""
    path = folder / f"{HELD}.toml"
    path.write_text(
        f'adapter = "{HELD}"\nfamily = "local"\ndescription = "waits for {release.name}"\n'
        f"\n[params]\nrelease = {json.dumps(str(release))}\nwaiting = {json.dumps(str(waiting))}\n"
        f"preload_timeout_s = {HOLD_S}\n",
        encoding="utf-8",
    )
    return path


def command(workdir: Path, card: Path, run_id: str) -> list[str]:
    systems = [arg for name in NAMES for arg in ("--system", name)]
    return [
        sys.executable,
        "-c",
        PMC,
        "run",
        "--workdir",
        str(workdir),
        "--systems-dir",
        str(SYSTEMS),
        *systems,
        "--system",
        str(card),
        "--rollouts",
        str(ROLLOUTS),
        "--run-id",
        run_id,
    ]


def files(run: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run)): p.read_bytes() for p in run.rglob("*") if p.is_file()}


def finished(run: Path) -> int:
    return len(list(run.rglob("trace.json")))


def kill_when(cmd: list[str], log: Path, reached: Callable[[], bool], jitter_s: float) -> None:
    """Start ``cmd``, wait until ``reached()``, then SIGKILL it ``jitter_s`` later."""
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + STALL_S
        while not reached():
            if proc.poll() is not None:
                pytest.fail(
                    f"the run ended (exit {proc.returncode}) before its kill:\n{log.read_text()}"
                )
            if time.monotonic() > deadline:
                pytest.fail(f"no progress in {STALL_S:.0f} s:\n{log.read_text()}")
            time.sleep(POLL_S)
        time.sleep(jitter_s)
        # The held system cannot let the run end, so this kill always lands mid-run.
        assert proc.poll() is None, log.read_text()
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.slow
def test_sigkill_at_random_moments_then_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    points = write_points(tmp_path)
    release, waiting = tmp_path / "release", tmp_path / "waiting"
    card = held_card(tmp_path, release, waiting)
    release.touch()
    subprocess.run(command(tmp_path, card, "whole"), check=True, capture_output=True)
    release.unlink()

    rng = random.Random(5)
    done = tmp_path / "runs" / "killed" / "rollouts"
    references = len(NAMES) * len(points) * ROLLOUTS
    # Four kills after a random number of finished reference rollouts (at least one more each
    # time), the fifth while the held system waits to connect.
    targets: list[int | None] = [*sorted(rng.sample(range(1, references), KILLS - 1)), None]
    progress = []
    for attempt, target in enumerate(targets):
        waiting.unlink(missing_ok=True)
        goal = None if target is None else max(target, finished(done) + 1)

        def reached(goal: int | None = goal) -> bool:
            return waiting.exists() or (goal is not None and finished(done) >= goal)

        log = tmp_path / f"attempt-{attempt}.log"
        kill_when(command(tmp_path, card, "killed"), log, reached, rng.uniform(0.0, JITTER_S))
        progress.append(finished(done))
    print(f"rollouts finished at each kill: {progress} (of {references} before the held ones)")
    assert waiting.exists()  # the last kill found the held system waiting
    assert finished(done / HELD) == 0  # it held: none of its rollouts ran
    assert 0 < progress[0] <= progress[-1] <= references

    release.touch()
    subprocess.run(command(tmp_path, card, "killed"), check=True, capture_output=True)
    whole = files(tmp_path / "runs" / "whole" / "rollouts")
    killed = files(done)
    assert len(whole) == (len(NAMES) + 1) * len(points) * ROLLOUTS * FILES_PER_ROLLOUT
    assert sorted(killed) == sorted(whole)  # nothing missing, nothing extra, no temporary file
    for name, data in whole.items():
        assert killed[name] == data, name
