"""A Ray run of the demo's points equals a local run, on the package's two local nodes.

On the virtual clock a run's folder must be the same byte for byte wherever its rollouts
stream: the reference systems at every point of three demo conversations (against the session's
``reference_run`` at the same points), and the endpointer cascade, the local system with real
models (VAD, transcription at recall points, Piper), on a pause, a turn end and a recall point
of two demo conversations. Scores written through Ray's scoring equal local scoring's, byte for
byte, for every reference system at the points of one conversation. The real clock's check is in
test_ray_timing.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pmc import io
from pmc.harness import RunSettings, run_rollouts, runs_dir
from pmc.points import MANIFEST_FILE, Point, PointKind, read_points
from pmc.scoring import (
    PROVENANCE_SUFFIX,
    ScoreSettings,
    ScoringCluster,
    read_provenance,
    run_scoring,
)
from pmc.systems import bundled_cards, find_card
from tests.conftest import REFERENCE_SYSTEMS, reference_settings
from tests.harness.ray_nodes import TwoNodes
from tests.systems.conftest import linked_points

pytestmark = pytest.mark.slow

SYSTEMS = bundled_cards()
ASR = "faster-whisper:tiny.en"
"""What ``reference_run`` is scored with."""
RAY_CONVERSATIONS = 3
"""The Ray run is compared at every point of this many of the demo's ten conversations (60 of
its 200 points, every kind), with the local run's rollouts of the same points: streaming all of
them again would add a minute and a half to the suite's longest chain."""
SCORED_CONVERSATIONS = 1
"""Ray scoring is compared at every point of this many of the demo's ten conversations (20 of
its 200 points, every kind): scoring more of them again would add a minute to the suite."""


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


def whole_conversations(points: list[Point], conversations: int) -> list[Point]:
    """Every point of the first ``conversations`` demo conversations (each has every kind)."""
    first = sorted({p.conversation_id for p in points})[:conversations]
    return [p for p in points if p.conversation_id in first]


@pytest.fixture(scope="module")
def reference_on_ray(
    reference_run: Path, ray_nodes: TwoNodes, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The reference systems at every point of three demo conversations, on the two nodes."""
    source = reference_run.parents[1]
    chosen = whole_conversations(read_points(source), RAY_CONVERSATIONS)
    workdir = linked_points(source, chosen, tmp_path_factory.mktemp("ray-demo"))
    cards = [find_card(name, SYSTEMS) for name in REFERENCE_SYSTEMS]
    tallies = run_rollouts(workdir, cards, reference_settings(ray_nodes.address))
    assert {n: (t.done, t.failed) for n, t in tallies.items()} == {
        n: (len(chosen), 0) for n in REFERENCE_SYSTEMS
    }
    return runs_dir(workdir) / "reference"


def test_the_reference_systems_on_ray_write_the_local_run_folder(
    reference_run: Path, reference_on_ray: Path
) -> None:
    remote = files(reference_on_ray)
    chosen = read_points(reference_on_ray.parents[1])
    assert {p.kind for p in chosen} == set(PointKind)
    ids = {p.point_id for p in chosen}
    # rollouts/SYSTEM/POINT/K/FILE: the local run's files of the same points
    local = {n: b for n, b in files(reference_run).items() if n.split("/")[2] in ids}
    assert len(local) == len(REFERENCE_SYSTEMS) * len(chosen) * 3  # trace, played, output
    assert remote.keys() == local.keys()
    assert [name for name in local if local[name] != remote[name]] == []
    ray, here = run_record(reference_on_ray), run_record(reference_run)
    manifest = reference_on_ray.parents[1] / "points" / MANIFEST_FILE
    assert ray.pop("points_manifest_sha256") == io.sha256_file(manifest)
    here.pop("points_manifest_sha256")
    assert ray == here


def test_scoring_on_ray_writes_the_local_score_files(
    reference_run: Path, reference_on_ray: Path, ray_nodes: TwoNodes, tmp_path: Path
) -> None:
    """Every reference system's Ray rollouts at the points of a conversation, scored there."""
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
    made = {f"scores/{s}{PROVENANCE_SUFFIX}" for s in REFERENCE_SYSTEMS}
    assert set(remote) == mine | made | {f"scores/{s}.jsonl" for s in REFERENCE_SYSTEMS}
    assert [name for name in sorted(mine) if local[name] != remote[name]] == []
    # Scored on Ray, the same card, settings and model files are recorded as scored here.
    for system in REFERENCE_SYSTEMS:
        here, there = (read_provenance(r, system) for r in (reference_run, run))
        assert here is not None and there is not None
        assert (here.card_sha256, here.score_settings, here.models) == (
            there.card_sha256,
            there.score_settings,
            there.models,
        )
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
