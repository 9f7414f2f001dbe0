"""The scoring bench: seconds of played audio scored per second of wall time.

It makes a small run of its own (the reference systems on a few points spoken by the bundled
voice, on the virtual clock) and scores it from nothing with the given recogniser and workers.
The Scoring issue's target: at least 10x real time on 2 cores with Whisper base int8.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import soundfile as sf

from pmc.harness import PLAYED_FILE, RolloutState, Run, RunSettings, run_rollouts, runs_dir
from pmc.scoring import WORDS_ENV, ScoreSettings, run_scoring
from pmc.systems import find_card
from pmc.testing.points import write_points

BENCH_SYSTEMS = ("always-speak", "person", "shuffled-person")
"""Systems whose played tracks hold speech (a silent track costs nothing to score)."""


@dataclass(frozen=True)
class ScoreBench:
    """One bench result."""

    asr: str
    workers: int
    rollouts: int
    played_s: float
    wall_s: float

    @property
    def speed(self) -> float:
        """Seconds of played audio scored per second."""
        return self.played_s / self.wall_s

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {**asdict(self), "speed": round(self.speed, 2)}


def bench_score(
    asr: str, workers: int, systems_dir: Path | None = None, rollouts: int = 2
) -> ScoreBench:
    """Make a small run and time scoring it from nothing."""
    # From nothing: not from the words other programs kept in a shared folder.
    shared = os.environ.pop(WORDS_ENV, None)
    try:
        return _bench_score(asr, workers, systems_dir, rollouts)
    finally:
        if shared is not None:
            os.environ[WORDS_ENV] = shared


def _bench_score(asr: str, workers: int, systems_dir: Path | None, rollouts: int) -> ScoreBench:
    with tempfile.TemporaryDirectory(prefix="pmc-bench-score-") as tmp:
        workdir = Path(tmp)
        write_points(workdir)
        cards = [find_card(name, systems_dir) for name in BENCH_SYSTEMS]
        run_rollouts(workdir, cards, RunSettings("bench", rollouts=rollouts))
        run = runs_dir(workdir) / "bench"
        tracks = [e.folder / PLAYED_FILE for e in Run(run).rollouts(states=(RolloutState.DONE,))]
        played = sum(sf.info(str(p)).duration for p in tracks)
        start = time.perf_counter()
        run_scoring(run, ScoreSettings(asr=asr), workers=workers)
        wall = time.perf_counter() - start
    return ScoreBench(asr, workers, len(tracks), round(played, 2), round(wall, 2))
