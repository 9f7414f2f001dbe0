"""On the real clock a Ray run of demo points gives the local run's outcomes and latencies.

Two runs on the real clock cannot be equal byte for byte, but the loopback fake (a known
latency, in a process of its own) must give each rollout the same outcome and a latency within
5 ms, beyond the lateness each run measured of itself.

Marked ``alone``: the fake runs at a lower priority than the harness (as hardware elsewhere
would), so beside the suite's other workers on 2 cores it is starved, and its replies come late
by more than the harness can see in its own lateness. ``make test`` runs it after the parallel
part, by itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from pmc.audio import SAMPLE_RATE
from pmc.harness import ClockKind, RunSettings, run_rollouts, runs_dir
from pmc.points import Point, PointKind, points_dir, read_points
from pmc.scoring import PauseOutcome, ScoreSettings, read_scores, run_scoring
from pmc.systems import load_card
from pmc.testing.loopback import SPEECH_RMS, LoopbackBehaviour, fake_system_process
from tests.harness.ray_nodes import TwoNodes
from tests.harness.test_ray_demo import ASR
from tests.systems.conftest import linked_points

pytestmark = [pytest.mark.slow, pytest.mark.alone]

SAME_WITHIN_MS = 5.0
"""The cluster issue's bound on a real-clock rollout's latency, Ray against local."""


FAKE = LoopbackBehaviour(latency_ms=1000.0, silence_ms=900.0, reply_text="yes I see what you mean")
"""The fake answers in words once per session, after its first silence of 900 ms: longer than
the pauses inside the demo's turns before the chosen points' boundaries."""


def longest_silence_ms(point: Point, workdir: Path) -> float:
    """The longest silence between speech frames before the boundary, by the fake's own rule."""
    live, _ = sf.read(points_dir(workdir) / "audio" / point.point_id / "live.wav", dtype="float32")
    frame = round(SAMPLE_RATE * 0.020)
    until = min(len(live) // frame, round(point.boundary_stream_s / 0.020))
    frames = live[: until * frame].reshape(until, frame)
    speech = np.flatnonzero(np.sqrt((frames**2).mean(axis=1)) >= SPEECH_RMS)
    gaps = np.diff(speech) - 1
    return float(gaps.max(initial=0)) * 20.0


def answerable(points: list[Point], workdir: Path, each: int = 2) -> list[Point]:
    """The shortest pauses and turn ends whose boundary is the fake's first endpoint.

    Pauses long enough for the fake to answer inside; no silence as long as the fake's before
    the boundary, so that its one answer comes after it.
    """

    def live_s(p: Point) -> float:
        return p.stream_end_conv_s - p.stream_start_conv_s

    def clear(p: Point) -> bool:
        return longest_silence_ms(p, workdir) < FAKE.silence_ms

    pauses = [
        p
        for p in points
        if p.kind is PointKind.PAUSE
        and p.boundary_end_stream_s - p.boundary_stream_s >= FAKE.latency_ms / 1000 + 0.5
        and clear(p)
    ]
    ends = [p for p in points if p.kind is PointKind.TURN_END and clear(p)]
    chosen = sorted(pauses, key=live_s)[:each] + sorted(ends, key=live_s)[:each]
    assert len(chosen) == 2 * each
    return chosen


@pytest.fixture
def loopback_card(tmp_path: Path) -> Iterator[Path]:
    """A card for the loopback fake, served from a process of its own.

    Family ``duplex``: the fake finds the end of the turn itself, so the harness streams silence
    after the live audio (a hosted card's input would end at the boundary, with nothing after it
    for the fake to hear as silence).
    """
    with fake_system_process(FAKE) as url:
        path = tmp_path / "loopback.toml"
        path.write_text(
            'adapter = "loopback-pcm"\nfamily = "duplex"\n'
            'description = "pmc.testing.loopback: a known response latency"\n'
            f'endpoint = "{url}"\nframe_ms = 20\nconcurrency = 6\n'
        )
        yield path


def late_ms(run: Path) -> dict[str, float]:
    """Each rollout's own measured lateness in ms: input frames, and the fake's reply."""
    found = {}
    for path in (run / "rollouts" / "loopback").glob("*/0/trace.json"):
        trace = json.loads(path.read_text())
        reply = [
            float(o["detail"].get("send_late_ms", 0.0))
            for o in trace["outputs"]
            if o["detail"].get("type") == "reply"
        ]
        found[path.parents[1].name] = float(trace["audit"]["lateness_max_ms"]) + max(
            reply, default=0.0
        )
    return found


def test_the_loopback_fake_on_ray_gives_the_local_outcomes_and_latencies(
    demo_points_workdir: Path, ray_nodes: TwoNodes, loopback_card: Path, tmp_path: Path
) -> None:
    chosen = answerable(read_points(demo_points_workdir), demo_points_workdir)
    workdir = linked_points(demo_points_workdir, chosen, tmp_path / "w")
    cards = [load_card(loopback_card)]
    common: dict[str, Any] = {"clock": ClockKind.REAL, "retries": 0}
    for run, where in (("here", None), ("ray", ray_nodes.address)):
        tallies = run_rollouts(workdir, cards, RunSettings(run, ray=where, **common))
        assert tallies["loopback"].done == len(chosen), tallies["loopback"].causes
        run_scoring(runs_dir(workdir) / run, ScoreSettings(asr=ASR), workers=1)
    here, on_ray = (runs_dir(workdir) / run for run in ("here", "ray"))
    local = {s.point_id: s for s in read_scores(here, "loopback")}
    remote = {s.point_id: s for s in read_scores(on_ray, "loopback")}
    assert remote.keys() == local.keys() == {p.point_id for p in chosen}
    late = {run: late_ms(run) for run in (here, on_ray)}
    for point_id, score in local.items():
        other = remote[point_id]
        if score.kind is PointKind.PAUSE:
            assert score.pause is not None and other.pause is not None
            assert score.pause.outcome is PauseOutcome.TAKEOVER, point_id  # the fake answered
            assert other.pause.outcome == score.pause.outcome, point_id
            first, second = score.pause.latency_s, other.pause.latency_s
        else:
            assert score.reply is not None and other.reply is not None
            first, second = score.reply.latency_s, other.reply.latency_s
        assert first is not None and second is not None, point_id
        assert 0 < first <= FAKE.latency_ms / 1000 + late[here][point_id] / 1000, point_id
        bound_ms = SAME_WITHIN_MS + late[here][point_id] + late[on_ray][point_id]
        assert abs(first - second) * 1000 <= bound_ms, (point_id, first, second)
