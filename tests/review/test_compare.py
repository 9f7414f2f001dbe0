"""The engine against human labels (paper Table 6) and reviewers against each other, by hand."""

from __future__ import annotations

import pytest

from pmc.corpus import Channel
from pmc.labels import Flag, Label, LabelKind, Labels, Rule
from pmc.review import (
    Decision,
    Entry,
    Reason,
    Target,
    cohen_kappa,
    engine_table,
    engine_vs_human,
    human_label,
    reviewers_table,
)

CID = "c1"


def _turn(speaker: Channel, start: float, end: float, flagged: bool = False) -> Label:
    flags = (Flag.SHORT_LEXICAL_TURN,) if flagged else ()
    return Label(
        f"turn-{speaker.value}-{start}", LabelKind.TURN, speaker, start, end,
        Rule.TURN_SPAN, 0.9, flags,
    )  # fmt: skip


def _labels(*labels: Label, duration: float = 120.0) -> Labels:
    return Labels(CID, duration, tuple(labels))


A, B = Channel.A, Channel.B
ENGINE = _labels(
    _turn(A, 0.0, 10.0),  # matched exactly
    _turn(A, 12.0, 20.0, flagged=True),  # matched, end moved by 0.2 s
    _turn(B, 21.0, 25.0),  # matched, start moved by 0.5 s
    _turn(B, 30.0, 31.0, flagged=True),  # made a backchannel by the human
    _turn(A, 40.0, 44.0),  # merged: the human turn runs 40..60, covers it, start same, end +16
    _turn(A, 46.0, 60.0),  # matched to the same merged turn, start moved 6 s
    _turn(B, 70.0, 72.0),  # no human label at all: unmatched, not a backchannel
)
HUMAN = _labels(
    human_label(CID, LabelKind.TURN, A, 0.0, 10.0),
    human_label(CID, LabelKind.TURN, A, 12.0, 20.2),
    human_label(CID, LabelKind.TURN, B, 21.5, 25.0),
    human_label(CID, LabelKind.BACKCHANNEL, B, 30.1, 30.9),
    human_label(CID, LabelKind.TURN, A, 40.0, 60.0),
)


def test_engine_against_human_counts_each_column_as_the_paper_does() -> None:
    row = engine_vs_human("ann", {CID: ENGINE}, {CID: HUMAN})
    assert (row.conversations, row.minutes) == (1, 2.0)
    assert (row.engine_turns, row.human_turns) == (7, 4)
    # Matched: 0-10, 12-20, 21-25, 40-44 (4 s inside 40-60), 46-60 (14 s inside 40-60).
    assert row.matched == 5
    # 30.1-30.9 covers 0.8 of the 1 s turn: more than half, so the turn was made a backchannel.
    assert row.made_backchannels == 1
    # Moved by more than 100 ms: 12-20 (0.2), 21-25 (0.5), 40-44 (16), 46-60 (6); > 250 ms:
    # three of them; > 1 s: the two merged turns.
    assert row.moved == (4, 3, 2)
    # Flagged: 12-20 (moved 0.2: changed) and 30-31 (unmatched: changed) -> 2 of 2.
    assert (row.flagged, row.flagged_changed) == (2, 2)
    # Unflagged: 0-10 unchanged; 21-25, 40-44, 46-60 moved; 70-72 unmatched -> 4 of 5.
    assert (row.unflagged, row.unflagged_changed) == (5, 4)
    table = engine_table([row])
    cells = dict(zip(table.columns, table.rows[0], strict=True))
    assert cells["matched share"] == pytest.approx(5 / 7, abs=1e-3)
    assert cells["moved > 250 ms"] == pytest.approx(3 / 5, abs=1e-3)
    assert cells["flagged changed"] == 1.0
    assert cells["unflagged changed"] == pytest.approx(0.8)


def test_a_conversation_only_one_side_labelled_is_left_out() -> None:
    row = engine_vs_human("ann", {CID: ENGINE, "c2": ENGINE}, {CID: HUMAN})
    assert (row.conversations, row.engine_turns) == (1, 7)


def test_cohen_kappa_matches_the_textbook_value() -> None:
    # Observed agreement 0.75; chance 0.5 * 0.25 + 0.5 * 0.75 = 0.5; kappa = 0.25 / 0.5.
    assert cohen_kappa([True, True, False, False], [True, False, False, False]) == 0.5
    assert cohen_kappa([True, False], [True, False]) == 1.0
    # Both always accept: agreement beyond chance is undefined, not perfect.
    assert cohen_kappa([True, True], [True, True]) is None
    assert cohen_kappa([], []) is None


def _decision(reviewer: str, window: str, accept: bool, sha: str = "s") -> Entry:
    return Entry(
        reviewer, Target.WINDOW, window, CID, f"label-{window}", sha,
        Decision.ACCEPT if accept else Decision.REJECT, "2026-12-02T00:00:00.000Z",
        None if accept else Reason.OTHER,
    )  # fmt: skip


def test_reviewers_agree_on_windows_and_boundaries() -> None:
    entries = [
        _decision("ann", "w1", True),
        _decision("ann", "w2", True),
        _decision("ann", "w3", False),
        _decision("ann", "w4", False),
        _decision("bob", "w1", False),  # changed his mind below: only the latest counts
        _decision("bob", "w1", True),
        _decision("bob", "w2", False),
        _decision("bob", "w3", False),
        _decision("bob", "w4", False),
        _decision("bob", "w5", True),  # ann never decided w5
        _decision("ann", "w6", True, sha="old"),  # stale: left out
        _decision("bob", "w6", True),
    ]
    current = {f"w{i}": "s" for i in range(1, 7)}
    bob = _labels(
        human_label(CID, LabelKind.TURN, A, 0.05, 10.2),  # start within 100, end within 250
        human_label(CID, LabelKind.TURN, A, 12.0, 21.0),  # end off by 0.8 s
    )
    ann = _labels(
        human_label(CID, LabelKind.TURN, A, 0.0, 10.0),
        human_label(CID, LabelKind.TURN, A, 12.0, 20.2),
    )
    table = reviewers_table(entries, current, {"ann": {CID: ann}, "bob": {CID: bob}})
    (row,) = table.rows
    cells = dict(zip(table.columns, row, strict=True))
    assert (cells["reviewer"], cells["other reviewer"]) == ("ann", "bob")
    assert cells["windows both decided"] == 4
    assert cells["agreement"] == 0.75
    assert cells["Cohen's kappa"] == 0.5
    assert (cells["conversations both labelled"], cells["matched boundaries"]) == (1, 4)
    # Shifts 0.05, 0.2, 0.0, 0.8: two within 100 ms, three within 250 ms.
    assert (cells["within 100 ms"], cells["within 250 ms"]) == (0.5, 0.75)
