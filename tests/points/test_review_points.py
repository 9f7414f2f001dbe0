"""The points stage reads the review: rejected windows are never drawn; N acceptances required."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pmc import io
from pmc.cli import cli
from pmc.labels import labels_dir, read_labels
from pmc.points import PointKind, points_dir, read_points, read_windows, run_points
from pmc.review import Decision, Entry, Reason, Target, Window, append, now_utc


@pytest.fixture
def workdir(review_built: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "w"
    shutil.copytree(review_built, copy)
    return copy


def _decide(workdir: Path, reviewer: str, w: Window, decision: Decision) -> None:
    reason = Reason.LISTENER_SPOKE if decision is Decision.REJECT else None
    append(
        workdir,
        Entry(
            reviewer, Target.WINDOW, w.window_id, w.conversation_id, w.label_id,
            w.label_sha256, decision, now_utc(), reason,
        ),
    )  # fmt: skip


def _funnel(workdir: Path) -> dict[str, dict[str, int]]:
    data = json.loads((points_dir(workdir) / "funnel.json").read_text())
    kinds: dict[str, dict[str, int]] = data["kinds"]
    return kinds


def _boundary_ids(workdir: Path) -> set[str]:
    kinds = (PointKind.PAUSE, PointKind.TURN_END)
    return {p.point_id for p in read_points(workdir) if p.kind in kinds}


def test_two_rejected_windows_are_not_selected_and_the_funnel_says_so(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # the funnel's table whole, not cropped
    result = CliRunner().invoke(cli, ["points", "--workdir", str(workdir), "--draw", "300"])
    assert result.exit_code == 0, result.output
    windows = read_windows(workdir)
    assert all(w.drawn for w in windows) and _boundary_ids(workdir) == {
        w.window_id for w in windows
    }
    pause = next(w for w in windows if w.kind.value == "pause")
    turn_end = next(w for w in windows if w.kind.value == "turn_end")
    _decide(workdir, "ann", pause, Decision.REJECT)
    _decide(workdir, "bob", turn_end, Decision.REJECT)
    _decide(workdir, "bob", pause, Decision.ACCEPT)  # one rejection is enough to leave it out
    result = CliRunner().invoke(cli, ["points", "--workdir", str(workdir), "--draw", "300"])
    assert result.exit_code == 0, result.output
    kept = _boundary_ids(workdir)
    assert pause.window_id not in kept and turn_end.window_id not in kept
    assert len(kept) == len(windows) - 2
    funnel = _funnel(workdir)
    for kind in ("pause", "turn_end"):
        assert funnel[kind]["rejected"] == 1
        assert funnel[kind]["reviewed"] == funnel[kind]["judged"] - 1 == funnel[kind]["drawn"]
    assert "rejected by a reviewer" in result.output
    assert "after review (rejected windows left out)" in result.output
    # The windows stay listed for review, now as not drawn.
    listed = {w.window_id: w.drawn for w in read_windows(workdir)}
    assert listed[pause.window_id] is False and listed[turn_end.window_id] is False


def test_require_review_keeps_only_windows_accepted_by_enough_reviewers(workdir: Path) -> None:
    windows = read_windows(workdir)
    ends = [w for w in windows if w.kind.value == "turn_end"]
    _decide(workdir, "ann", ends[0], Decision.ACCEPT)
    _decide(workdir, "bob", ends[0], Decision.ACCEPT)
    _decide(workdir, "ann", ends[1], Decision.ACCEPT)
    _, funnel = run_points(workdir, draw=300, require_review=2)
    assert _boundary_ids(workdir) == {ends[0].window_id}
    assert (funnel.reviewed["turn_end"], funnel.reviewed["pause"]) == (1, 0)
    # Recall points are not windows: a review requirement does not touch them.
    assert funnel.drawn["fact_recall"] > 0
    _, funnel = run_points(workdir, draw=300, require_review=1)
    assert _boundary_ids(workdir) == {ends[0].window_id, ends[1].window_id}


def test_a_rejection_of_a_label_that_changed_since_no_longer_counts(workdir: Path) -> None:
    pause = next(w for w in read_windows(workdir) if w.kind.value == "pause")
    _decide(workdir, "ann", pause, Decision.REJECT)
    run_points(workdir, draw=300)
    assert pause.window_id not in _boundary_ids(workdir)
    path = labels_dir(workdir) / f"{pause.conversation_id}.json"
    labels = read_labels(path)
    changed = tuple(
        dataclasses.replace(x, confidence=0.5) if x.id == pause.label_id else x
        for x in labels.labels
    )
    io.write_json(path, dataclasses.replace(labels, labels=changed).to_dict())
    _, funnel = run_points(workdir, draw=300)
    assert pause.window_id in _boundary_ids(workdir)
    assert funnel.rejected["pause"] == 0
