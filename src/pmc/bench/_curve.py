"""The curve bench: a sweep by replay against the same settings run as cards.

On a working directory's pause and turn-end points, it times ``pmc curve``'s sweep of the
settings, then runs some of the same settings as ordinary cards (rollouts on the virtual clock,
recognition and voice included, not scored) and gives the time per card. The trade-off issue's
target: twenty settings swept in under a twentieth of the time of running them as cards.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pmc.curves import sweep
from pmc.harness import RunSettings, run_rollouts
from pmc.points import MANIFEST_FILE, Point, PointKind, points_dir, read_points
from pmc.systems import SystemCard


@dataclass(frozen=True)
class CurveBench:
    """One bench result (seconds of wall time)."""

    points: int
    settings: int
    sweep_s: float
    cards_run: int
    card_s: tuple[float, ...]

    @property
    def per_card_s(self) -> float:
        """The mean time of one setting run as a card."""
        return sum(self.card_s) / len(self.card_s)

    @property
    def ratio(self) -> float:
        """The sweep's time over the time of running every setting as a card."""
        return self.sweep_s / (self.per_card_s * self.settings)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {**asdict(self), "per_card_s": self.per_card_s, "ratio": self.ratio}


def _linked(workdir: Path, points: Sequence[Point], into: Path) -> Path:
    """A working directory of ``points`` whose cuts are the original's (linked)."""
    from pmc import io

    audio = into / "points" / "audio"
    audio.mkdir(parents=True)
    for p in points:
        (audio / p.point_id).symlink_to((points_dir(workdir) / "audio" / p.point_id).resolve())
    with io.atomic_open(into / "points" / MANIFEST_FILE) as handle:
        for p in points:
            handle.write(io.json_line(p.to_dict()))
    return into


def bench_curve(
    workdir: Path, card: SystemCard, silence_ms: Sequence[float], cards_run: int
) -> CurveBench:
    """Time the sweep of ``silence_ms``, then ``cards_run`` of them run as cards."""
    kinds = (PointKind.PAUSE, PointKind.TURN_END)
    points = [p for p in read_points(workdir) if p.kind in kinds]
    folder = Path(tempfile.mkdtemp(prefix="pmc-bench-curve-"))
    try:
        work = _linked(workdir, points, folder / "w")
        begun = time.perf_counter()
        sweep(work, card, silence_ms)
        sweep_s = time.perf_counter() - begun
        card_s = []
        for i, ms in enumerate(silence_ms[:cards_run]):
            turns = {**card.turn_detection, "silence_ms": ms}
            setting = dataclasses.replace(card, name=f"bench-{ms:g}", turn_detection=turns)
            begun = time.perf_counter()
            run_rollouts(work, [setting], RunSettings(f"bench-{i}"))
            card_s.append(time.perf_counter() - begun)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return CurveBench(len(points), len(silence_ms), sweep_s, len(card_s), tuple(card_s))
