"""The decision logs, where each window stands, edits of human labels, and truth's verdicts."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pmc.corpus import Channel
from pmc.errors import PmcError
from pmc.labels import LabelKind, Labels
from pmc.review import (
    Decision,
    EditConflict,
    Entry,
    Reason,
    Target,
    Window,
    WindowKind,
    append,
    apply_edit,
    check_reviewer,
    human_label,
    log_path,
    read_log,
    reviewers,
    truth_decision,
    window_reviews,
)

CID = "c1"
A, B = Channel.A, Channel.B


def _entry(reviewer: str, window: str, decision: Decision, sha: str = "s1") -> Entry:
    reason = Reason.UNCLEAR_AUDIO if decision is Decision.REJECT else None
    return Entry(
        reviewer, Target.WINDOW, window, CID, "pause-1", sha, decision,
        "2026-12-02T00:00:00.000Z", reason, note="heard a <b>cough</b>",
    )  # fmt: skip


def test_logs_are_per_reviewer_append_only_and_round_trip(tmp_path: Path) -> None:
    first = _entry("ann", "w1", Decision.ACCEPT)
    second = _entry("ann", "w1", Decision.REJECT)
    append(tmp_path, first)
    append(tmp_path, _entry("bob", "w1", Decision.ACCEPT))
    before = log_path(tmp_path, "ann").read_bytes()
    append(tmp_path, second)
    assert log_path(tmp_path, "ann").read_bytes().startswith(before)  # appended, not rewritten
    assert reviewers(tmp_path) == ["ann", "bob"]
    assert read_log(tmp_path, "ann").entries == [first, second]
    assert [e.reviewer for e in read_log(tmp_path).entries] == ["ann", "ann", "bob"]


def test_an_unreadable_line_is_named_and_skipped_and_the_rest_counts(tmp_path: Path) -> None:
    append(tmp_path, _entry("ann", "w1", Decision.ACCEPT))
    with log_path(tmp_path, "ann").open("a") as handle:
        handle.write("{not json\n")
    append(tmp_path, _entry("ann", "w2", Decision.ACCEPT))
    read = read_log(tmp_path)
    assert [e.target_id for e in read.entries] == ["w1", "w2"]
    (problem,) = read.skipped
    assert problem.startswith(f"{log_path(tmp_path, 'ann')}: line 2: not a review decision")


@pytest.mark.parametrize("name", ["../x", "a/b", "", ".hidden", "x" * 65, "ann bob"])
def test_a_reviewer_name_that_cannot_name_a_log_file_is_refused(name: str) -> None:
    with pytest.raises(PmcError, match="reviewer name"):
        check_reviewer(name)


def test_a_rejection_needs_a_reason_and_a_window_takes_no_edit() -> None:
    with pytest.raises(ValueError, match="reason"):
        Entry("ann", Target.WINDOW, "w", CID, "l", "s", Decision.REJECT, "t")
    with pytest.raises(ValueError, match="cannot be given"):
        Entry("ann", Target.WINDOW, "w", CID, "l", "s", Decision.MOVE, "t")


def test_latest_decision_counts_and_a_changed_label_makes_it_stale() -> None:
    entries = [
        _entry("ann", "w1", Decision.REJECT),
        _entry("ann", "w1", Decision.ACCEPT),  # ann changed her mind
        _entry("bob", "w1", Decision.REJECT),
        _entry("ann", "w2", Decision.REJECT, sha="old"),  # judged an earlier label
        _entry("ann", "w3", Decision.ACCEPT),  # its label is gone
    ]
    reviews = window_reviews(entries, {"w1": "s1", "w2": "s1"})
    assert reviews["w1"].accepted_by == ("ann",)
    assert reviews["w1"].rejected_by == (("bob", Reason.UNCLEAR_AUDIO),)
    assert reviews["w2"].stale_by == ("ann",) and not reviews["w2"].rejected
    assert reviews["w3"].stale_by == ("ann",)


def _labels(*labels: object) -> Labels:
    return Labels(CID, 60.0, tuple(labels))  # type: ignore[arg-type]


def test_edits_apply_to_the_label_as_seen_and_refuse_one_that_changed() -> None:
    turn = human_label(CID, LabelKind.TURN, A, 1.0, 5.0, "hello there")
    labels = _labels(turn)
    moved = human_label(CID, LabelKind.TURN, A, 1.0, 5.5, "hello there")
    after = apply_edit(labels, Decision.MOVE, turn.id, turn.content_sha256(), moved)
    assert [x.end_conv_s for x in after.labels] == [5.5]
    with pytest.raises(EditConflict, match="changed since it was shown"):
        apply_edit(after, Decision.MOVE, turn.id, turn.content_sha256(), moved)
    with pytest.raises(EditConflict, match="changed since it was shown"):
        apply_edit(after, Decision.DELETE, moved.id, "stale-hash", None)
    added = human_label(CID, LabelKind.BACKCHANNEL, B, 2.0, 2.4, "mm")
    both = apply_edit(after, Decision.ADD, "", "", added)
    assert [x.kind for x in both.labels] == [LabelKind.TURN, LabelKind.BACKCHANNEL]
    with pytest.raises(EditConflict, match="already there"):
        apply_edit(both, Decision.ADD, "", "", added)
    gone = apply_edit(both, Decision.DELETE, added.id, added.content_sha256(), None)
    assert gone.labels == after.labels
    with pytest.raises(PmcError, match="before it starts"):
        human_label(CID, LabelKind.TURN, A, 5.0, 4.0)


def _window(kind: WindowKind, start: float, end: float) -> Window:
    return Window("w", kind, CID, A, start, end, 0.0, end + 2.0, "l", "s", True)


TRUTH = _labels(
    human_label(CID, LabelKind.TURN, A, 0.0, 10.0),
    human_label(CID, LabelKind.PAUSE, A, 3.0, 4.0),
    human_label(CID, LabelKind.PAUSE, A, 6.0, 7.0),
    human_label(CID, LabelKind.BACKCHANNEL, B, 6.3, 6.6, "yeah"),
    human_label(CID, LabelKind.END_OF_TURN, A, 10.0, 10.0),
)


@pytest.mark.parametrize(
    ("kind", "start", "end", "decision", "reason"),
    [
        (WindowKind.PAUSE, 3.1, 4.0, Decision.ACCEPT, None),
        (WindowKind.PAUSE, 6.0, 7.0, Decision.REJECT, Reason.LISTENER_SPOKE),
        (WindowKind.PAUSE, 8.0, 9.0, Decision.REJECT, Reason.NOT_A_PAUSE),
        (WindowKind.PAUSE, 2.5, 3.5, Decision.REJECT, Reason.BOUNDARY_MISPLACED),
        (WindowKind.TURN_END, 10.2, 10.2, Decision.ACCEPT, None),
        (WindowKind.TURN_END, 3.1, 3.1, Decision.REJECT, Reason.OTHER),
        (WindowKind.TURN_END, 9.0, 9.0, Decision.REJECT, Reason.BOUNDARY_MISPLACED),
    ],
)
def test_truth_judges_a_window_by_its_own_labels(
    kind: WindowKind, start: float, end: float, decision: Decision, reason: Reason | None
) -> None:
    got, why, _ = truth_decision(_window(kind, start, end), TRUTH)
    assert (got, why) == (decision, reason)


def test_a_window_round_trips_and_refuses_an_unknown_schema() -> None:
    window = _window(WindowKind.TURN_END, 10.0, 10.0)
    assert Window.from_dict(window.to_dict()) == window
    with pytest.raises(ValueError, match="schema version"):
        Window.from_dict({**window.to_dict(), "schema_version": 99})
    assert dataclasses.replace(window, drawn=False).to_dict()["drawn"] is False
