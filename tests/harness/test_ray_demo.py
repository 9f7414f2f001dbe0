"""A Ray run of the demo's points equals a local run, on the package's two local nodes.

On the virtual clock a run's folder must be the same byte for byte wherever its rollouts
stream: the reference systems on every demo point (the local run is the session's
``reference_run``), and the endpointer cascade, the local system with real models (VAD,
transcription at recall points, Piper), on a pause, a turn end and a recall point of two demo
conversations. Scores written through Ray's scoring equal local scoring's, byte for byte, for
every reference system at the points of two conversations. On the
real clock two runs cannot be equal byte for byte, but the loopback fake (a known latency, in a
process of its own) must give each rollout the same outcome and a latency within 5 ms, beyond
the lateness each run measured of itself.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from pmc.audio import SAMPLE_RATE
from pmc.harness import ClockKind, RunSettings, run_rollouts, runs_dir
from pmc.points import Point, PointKind, points_dir, read_points
from pmc.scoring import PauseOutcome, ScoreSettings, ScoringCluster, read_scores, run_scoring
from pmc.systems import bundled_cards, find_card, load_card
from pmc.testing.loopback import SPEECH_RMS, LoopbackBehaviour, fake_system_process
from tests.conftest import REFERENCE_SYSTEMS, reference_settings
from tests.harness.ray_nodes import TwoNodes
from tests.systems.conftest import linked_points

pytestmark = pytest.mark.slow

SYSTEMS = bundled_cards()
ASR = "faster-whisper:tiny.en"
"""What ``reference_run`` is scored with."""
SCORED_CONVERSATIONS = 2
"""Ray scoring is compared at every point of this many of the demo's ten conversations (28 of
its 140 points, every kind): scoring all of them again would add over a minute to the suite."""
SAME_WITHIN_MS = 5.0
"""The cluster issue's bound on a real-clock rollout's latency, Ray against local."""


def files(run: Path, under: str = "rollouts") -> dict[str, bytes]:
    """Every file of a run folder under ``under``, by path relative to the run."""
    return {
        str(p.relative_to(run)): p.read_bytes()
        for p in sorted((run / under).rglob("*"))
        if p.is_file()
    }


def run_record(run: Path) -> dict[str, Any]:
    """``run.json`` without the run's own id."""
    record: dict[str, Any] = json.loads((run / "run.json").read_text())
    record.pop("run_id")
    return record


@pytest.fixture(scope="module")
def reference_on_ray(
    reference_run: Path, ray_nodes: TwoNodes, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The reference systems on every demo point, streamed on the two nodes."""
    source = reference_run.parents[1]
    workdir = linked_points(source, read_points(source), tmp_path_factory.mktemp("ray-demo"))
    cards = [find_card(name, SYSTEMS) for name in REFERENCE_SYSTEMS]
    tallies = run_rollouts(workdir, cards, reference_settings(ray_nodes.address))
    points = len(read_points(source))
    assert {n: (t.done, t.failed) for n, t in tallies.items()} == {
        n: (points, 0) for n in REFERENCE_SYSTEMS
    }
    return runs_dir(workdir) / "reference"


def test_the_reference_systems_on_ray_write_the_local_run_folder(
    reference_run: Path, reference_on_ray: Path
) -> None:
    local, remote = files(reference_run), files(reference_on_ray)
    points = len(read_points(reference_run.parents[1]))
    assert len(local) == len(REFERENCE_SYSTEMS) * points * 3  # trace, played, output
    assert remote.keys() == local.keys()
    assert [name for name in local if local[name] != remote[name]] == []
    assert run_record(reference_on_ray) == run_record(reference_run)


def test_scoring_on_ray_writes_the_local_score_files(
    reference_run: Path, reference_on_ray: Path, ray_nodes: TwoNodes, tmp_path: Path
) -> None:
    """Every reference system's Ray rollouts at the points of two conversations, scored there."""
    source = reference_run.parents[1]
    first = sorted({p.conversation_id for p in read_points(source)})[:SCORED_CONVERSATIONS]
    chosen = [p for p in read_points(source) if p.conversation_id in first]
    assert {p.kind for p in chosen} == set(PointKind)
    run = runs_dir(linked_points(source, chosen, tmp_path / "w")) / "reference"
    run.mkdir(parents=True)
    shutil.copy(reference_on_ray / "run.json", run / "run.json")
    for system in REFERENCE_SYSTEMS:
        for point in chosen:
            folder = Path("rollouts") / system / point.point_id
            shutil.copytree(reference_on_ray / folder, run / folder)
    where = ScoringCluster(ray_nodes.address)
    tallies = run_scoring(run, ScoreSettings(asr=ASR), cluster=where)
    assert {n: t.scored for n, t in tallies.items()} == {n: len(chosen) for n in REFERENCE_SYSTEMS}
    local, remote = files(reference_run, "scores"), files(run, "scores")
    ids = {p.point_id for p in chosen}
    mine = {f"scores/{s}/{i}/0.json" for s in REFERENCE_SYSTEMS for i in ids}
    assert set(remote) == mine | {f"scores/{s}.jsonl" for s in REFERENCE_SYSTEMS}
    assert [name for name in sorted(mine) if local[name] != remote[name]] == []
    for system in REFERENCE_SYSTEMS:
        lines = local[f"scores/{system}.jsonl"].decode().splitlines(keepends=True)
        kept = [line for line in lines if json.loads(line)["point_id"] in ids]
        assert remote[f"scores/{system}.jsonl"].decode() == "".join(kept), system


def a_slice(points: list[Point], conversations: int = 2) -> list[Point]:
    """The first pause, turn end and fact recall of the first ``conversations``."""
    first = sorted({p.conversation_id for p in points})[:conversations]
    chosen: dict[tuple[str, PointKind], Point] = {}
    for point in points:
        if point.conversation_id in first and point.kind in (
            PointKind.PAUSE,
            PointKind.TURN_END,
            PointKind.FACT_RECALL,
        ):
            chosen.setdefault((point.conversation_id, point.kind), point)
    assert len(chosen) == 3 * conversations
    return list(chosen.values())


def test_the_endpointer_on_ray_writes_the_local_run_folder(
    demo_points_workdir: Path, ray_nodes: TwoNodes, tmp_path: Path
) -> None:
    chosen = a_slice(read_points(demo_points_workdir))
    workdir = linked_points(demo_points_workdir, chosen, tmp_path / "w")
    cards = [find_card("endpointer-300", SYSTEMS)]
    run_rollouts(workdir, cards, RunSettings("here"))
    run_rollouts(workdir, cards, RunSettings("ray", ray=ray_nodes.address))
    here, on_ray = (runs_dir(workdir) / run for run in ("here", "ray"))
    local, remote = files(here), files(on_ray)
    assert len(local) == len(chosen) * 3
    assert remote.keys() == local.keys()
    assert [name for name in local if local[name] != remote[name]] == []


# -- the real clock ----------------------------------------------------------------------------


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
