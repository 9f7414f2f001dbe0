"""The run folder as a type: its record read and written whole, its rollouts found in order."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from pmc import io
from pmc.errors import PmcError
from pmc.harness import (
    ClockKind,
    Observed,
    ProtocolParams,
    RolloutState,
    Run,
    RunRecord,
    RunSettings,
    SystemEntry,
    run_rollouts,
    runs_dir,
)
from pmc.points import read_points
from pmc.systems import Family, SystemCard
from pmc.testing.points import write_points
from pmc.testing.systems import ScriptedSystem

TALKER = SystemCard(
    "talker",
    "scripted",
    Family.LOCAL,
    "says one thing",
    params={"say": [{"at_s": 0.2, "seconds": 0.5}]},
)
FLAKY = SystemCard("flaky", "scripted", Family.LOCAL, "fails once", params={"say": []})


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """Both systems at four points: the talker's rollouts all done, the flaky one's first failed."""
    workdir = tmp_path_factory.mktemp("run-folder")
    write_points(workdir)
    ScriptedSystem.refuse = 1
    try:
        run_rollouts(workdir, [FLAKY], RunSettings("r", retries=0, seed=7))
    finally:
        ScriptedSystem.refuse = 0
    run_rollouts(workdir, [TALKER], RunSettings("r", seed=7))
    return Run(runs_dir(workdir) / "r")


def test_the_record_is_typed_and_writes_back_the_file_it_was_read_from(run: Run) -> None:
    record = run.record
    assert (record.run_id, record.seed, record.rollouts) == ("r", 7, 1)
    assert record.protocol == ProtocolParams()
    assert record.systems == {
        "flaky": SystemEntry(FLAKY, "1", ClockKind.VIRTUAL),
        "talker": SystemEntry(TALKER, "1", ClockKind.VIRTUAL),
    }
    assert io.dumps(record.to_dict()) == run.record_path.read_text(encoding="utf-8")
    assert RunRecord.from_dict(record.to_dict()) == record


def test_rollouts_come_in_order_with_their_state(run: Run, tmp_path: Path) -> None:
    points = sorted(p.point_id for p in read_points(run.workdir))
    done = list(run.rollouts(["talker"]))
    assert [(e.point_id, e.rollout, e.state) for e in done] == [
        (p, 0, RolloutState.DONE) for p in points
    ]
    assert all(e.folder == run.rollout_dir("talker", e.point_id, 0) for e in done)
    flaky = {e.point_id: e.state for e in run.rollouts(["flaky"])}
    assert sorted(flaky.values()).count(RolloutState.FAILED) == 1
    assert sorted(flaky.values()).count(RolloutState.DONE) == len(points) - 1

    # A copy with a rollout under way, rollouts 2 and 10 of a point, and a stray folder.
    copy = Run(tmp_path / "runs" / "r")
    shutil.copytree(run.folder, copy.folder)
    point = points[0]
    for k in (10, 2):
        shutil.copytree(copy.rollout_dir("talker", point, 0), copy.rollout_dir("talker", point, k))
    copy.rollout_dir("talker", point, 1).mkdir()  # under way: no trace, no error yet
    (copy.rollout_dir("talker", point, 0).parent / "0.tmp").mkdir()
    ks = [e.rollout for e in copy.rollouts(["talker"]) if e.point_id == point]
    assert ks == [0, 2, 10]
    everything = copy.rollouts(["talker"], states=tuple(RolloutState))
    assert [(e.rollout, e.state) for e in everything if e.point_id == point] == [
        (0, RolloutState.DONE),
        (1, RolloutState.PENDING),
        (2, RolloutState.DONE),
        (10, RolloutState.DONE),
    ]
    assert copy.systems_with_rollouts() == ["flaky", "talker"]
    assert [e.system for e in copy.rollouts()][:1] == ["flaky"]


def test_a_folder_without_a_record_or_with_a_broken_one_says_which_file(tmp_path: Path) -> None:
    empty = Run(tmp_path / "nothing")
    with pytest.raises(PmcError, match=r"nothing/run.json: not a run folder"):
        _ = empty.record
    assert list(empty.rollouts()) == []
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "run.json").write_text(json.dumps({"schema_version": 1, "run_id": "x"}))
    with pytest.raises(PmcError, match=r"broken/run.json: not a run record \(KeyError"):
        _ = Run(broken).record


def test_an_invocation_with_other_settings_is_refused_and_new_systems_join(run: Run) -> None:
    record = run.record
    with pytest.raises(PmcError, match="another seed"):
        record.joined(replace(record, seed=8), run.record_path)
    changed = SystemEntry(TALKER, "2", ClockKind.VIRTUAL)
    with pytest.raises(PmcError, match="system talker has changed"):
        record.joined(replace(record, systems={"talker": changed}), run.record_path)
    newcomer = SystemEntry(SystemCard("quiet", "scripted", Family.LOCAL), "1", ClockKind.REAL)
    joined = record.joined(
        replace(record, systems={"quiet": newcomer}, rollouts=3), run.record_path
    )
    assert list(joined.systems) == ["flaky", "talker", "quiet"]
    assert joined.rollouts == 3


def test_observations_add_up_over_invocations(run: Run) -> None:
    first = Observed(1, {"rate_limited": 1}, 2.0, 4, {})
    second = Observed(2, {"rate_limited": 1, "overloaded": 1}, 0.5, 2, {"event x": 1})
    record = run.record.with_observed({"talker": first}).with_observed({"talker": second})
    assert record.observed["talker"] == first.plus(second)
    assert record.to_dict()["observed"]["talker"]["retry_reasons"] == {
        "overloaded": 1,
        "rate_limited": 2,
    }
    assert "observed" not in run.record.to_dict()  # a clean run's record has none
