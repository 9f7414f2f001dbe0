"""The context ablation: a run's history mode changes what systems hear, and nothing else.

Only the history before the live turn changes; the live turn, the point and its ending do not.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pmc import io
from pmc.errors import PmcError
from pmc.harness import (
    HistorySource,
    Run,
    RunSettings,
    default_run_id,
    history_donor,
    live_for,
    preload_for,
    run_rollouts,
    runs_dir,
    with_history,
)
from pmc.points import MANIFEST_FILE, Point, PointKind, read_points
from pmc.scoring import strict_recall
from pmc.systems import bundled_cards, find_card
from pmc.testing.points import write_points
from tests.systems.conftest import linked_points

DONOR_TEXT = "The lighthouse keeper painted every stair green."


@pytest.fixture(scope="module")
def two_conversations(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Point]]:
    """Four points of each of two conversations in one working directory.

    conv-2's history text says :data:`DONOR_TEXT`, so a history taken from it is recognisable.
    """
    workdir = tmp_path_factory.mktemp("two")
    first = write_points(workdir, "conv-1")
    second = write_points(workdir, "conv-2")
    for point in second:
        path = workdir / "points" / point.cuts["history_text"]
        io.write_json(path, {"messages": [{"role": "user", "text": DONOR_TEXT}]})
    points = first + second
    with io.atomic_open(workdir / "points" / MANIFEST_FILE) as handle:
        for p in points:
            handle.write(io.json_line(p.to_dict()))
    return workdir, read_points(workdir)


def test_full_history_is_the_points_own(two_conversations: tuple[Path, list[Point]]) -> None:
    workdir, points = two_conversations
    pdir = workdir / "points"
    own = preload_for(pdir, points[0], 7)
    assert with_history(own, HistorySource.FULL, points[0], points, pdir, 0) is own


def test_no_history_leaves_the_live_turn_alone(two_conversations: tuple[Path, list[Point]]) -> None:
    workdir, points = two_conversations
    pdir = workdir / "points"
    point = points[0]
    own = preload_for(pdir, point, 7)
    assert len(own.user_audio) > 0 and own.messages
    none = with_history(own, HistorySource.NONE, point, points, pdir, 0)
    assert len(none.user_audio) == len(none.system_audio) == 0
    assert none.messages == [] and none.system_words == ()
    assert none.history_start_conv_s == point.stream_start_conv_s
    # What the point is and how it ends are untouched.
    assert (none.identity_prompt, none.endpointing, none.seed) == (
        own.identity_prompt,
        own.endpointing,
        own.seed,
    )


def test_a_shuffled_history_is_as_long_and_from_another_conversation(
    two_conversations: tuple[Path, list[Point]],
) -> None:
    workdir, points = two_conversations
    pdir = workdir / "points"
    for point in [p for p in points if p.conversation_id == "conv-1"]:
        own = preload_for(pdir, point, 7)
        donor = history_donor(point, points, seed=0)
        assert donor.conversation_id == "conv-2"
        shuffled = with_history(own, HistorySource.SHUFFLED, point, points, pdir, 0)
        assert len(shuffled.user_audio) == len(own.user_audio)
        assert len(shuffled.system_audio) == len(own.system_audio)
        theirs = preload_for(pdir, donor, 7)
        assert np.array_equal(shuffled.user_audio, theirs.user_audio[-len(own.user_audio) :])
        assert [m["text"] for m in shuffled.messages] == [DONOR_TEXT]
        assert shuffled.identity_prompt == own.identity_prompt
        # The live turn is the point's own, whatever history it is given.
        assert np.array_equal(live_for(pdir, point), live_for(pdir, point))


def test_the_stand_in_is_chosen_from_the_seed_and_the_same_for_every_system(
    two_conversations: tuple[Path, list[Point]],
) -> None:
    _, points = two_conversations
    point = points[0]
    donors = [history_donor(point, points, seed) for seed in range(20)]
    assert history_donor(point, points, 3) == history_donor(point, points, 3)
    # The seed chooses among the other conversation's points.
    assert len({d.point_id for d in donors}) > 1
    assert {d.conversation_id for d in donors} == {"conv-2"}


def test_a_corpus_of_one_conversation_cannot_be_shuffled(tmp_path: Path) -> None:
    points = write_points(tmp_path, "only")
    with pytest.raises(PmcError, match="another conversation"):
        history_donor(points[0], points, 0)


def test_an_ablated_run_has_its_own_id_and_records_its_history(tmp_path: Path) -> None:
    write_points(tmp_path)
    full, none = default_run_id(tmp_path), default_run_id(tmp_path, HistorySource.NONE)
    assert none == f"{full}-history-none"
    cards = [find_card("never-speak", bundled_cards())]
    run_rollouts(tmp_path, cards, RunSettings(none, history=HistorySource.NONE))
    record = Run(runs_dir(tmp_path) / none).record
    assert record.history is HistorySource.NONE
    assert io.read_json(runs_dir(tmp_path) / none / "run.json")["history"] == "none"
    with pytest.raises(PmcError, match="another history"):
        run_rollouts(tmp_path, cards, RunSettings(none, history=HistorySource.SHUFFLED))


RECALL_POINTS = 6
"""Of the demo's conversation-recall points, how many the cascade is run at per history."""


def _answers(run_dir: Path, system: str) -> dict[str, str]:
    out = {}
    for entry in Run(run_dir).rollouts([system]):
        trace = io.read_json(entry.folder / "trace.json")
        said = " ".join(o["text"] for o in trace["outputs"] if o["kind"] == "text")
        out[entry.point_id] = said
    return out


def test_the_cascade_recalls_only_what_its_history_holds(
    demo_points_workdir: Path, tmp_path: Path
) -> None:
    """The endpointer cascade finds what was said in the point's own history, and no other.

    Given none, or another conversation's, it answers as a system without the facts would.
    """
    recalls = [
        p for p in read_points(demo_points_workdir) if p.kind is PointKind.CONVERSATION_RECALL
    ]
    chosen = sorted(recalls, key=lambda p: p.stream_end_conv_s - p.stream_start_conv_s)
    chosen = chosen[:RECALL_POINTS]
    workdir = linked_points(demo_points_workdir, chosen, tmp_path / "w")
    cards = [find_card("endpointer-300", bundled_cards())]
    correct: dict[HistorySource, int] = {}
    for mode in HistorySource:
        run_id = default_run_id(workdir, mode)
        run_rollouts(workdir, cards, RunSettings(run_id, history=mode))
        answers = _answers(runs_dir(workdir) / run_id, "endpointer-300")
        assert len(answers) == len(chosen)
        correct[mode] = sum(
            strict_recall(answers[p.point_id], p.gold_answer or "", p.kind).correct for p in chosen
        )
    assert correct[HistorySource.FULL] >= RECALL_POINTS // 2, correct
    assert correct[HistorySource.NONE] == correct[HistorySource.SHUFFLED] == 0, correct
