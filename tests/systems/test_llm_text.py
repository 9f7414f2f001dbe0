"""The text-model recall ceiling (``llm-text``) at the demo's recall points, with a scripted LLM.

The scripted model finds the demo question it was asked (from the recognised question, by the
words they share) and answers its gold answer, or a wrong one. The card is the bundled one with
the model swapped for the script; rollouts run on the virtual clock and are scored with the
strict matcher like every system's.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from pmc.harness import RunSettings, run_rollouts, runs_dir
from pmc.llm import LlmClient, LlmRequest, ScriptedLlm, register_llm
from pmc.points import Point, PointKind, read_points
from pmc.scoring import ScoreSettings, read_scores, run_scoring
from pmc.systems import bundled_cards, find_card
from tests.systems.conftest import linked_points

pytestmark = pytest.mark.slow

CONVERSATIONS = 1
"""Recall points of this many demo conversations: every prefix of both recall kinds."""
_QUESTIONS: list[Point] = []


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def _gold(request: LlmRequest) -> dict[str, str]:
    heard = _words(request.user.rpartition("Question:")[2])
    best = max(_QUESTIONS, key=lambda p: len(heard & _words(p.question)))
    # A sentence, as the card's prompt asks, phrased as the person's reference is: a bare
    # name, or "It was eight.", loses the answer to transcription (tiny.en hears "It was a").
    return {"answer": f"The answer is {best.gold_answer}."}


@register_llm("test-gold")
def _gold_client(model: str) -> LlmClient:
    return ScriptedLlm(_gold, model)


@register_llm("test-wrong")
def _wrong_client(model: str) -> LlmClient:
    return ScriptedLlm(lambda _request: {"answer": "The answer is purple elephants."}, model)


@pytest.fixture(scope="module")
def recall_points(demo_points_workdir: Path) -> list[Point]:
    points = read_points(demo_points_workdir)
    first = sorted({p.conversation_id for p in points})[:CONVERSATIONS]
    recall = (PointKind.CONVERSATION_RECALL, PointKind.FACT_RECALL)
    chosen = [p for p in points if p.conversation_id in first and p.kind in recall]
    _QUESTIONS[:] = chosen
    return chosen


def _strict(demo: Path, chosen: list[Point], work: Path, model: str) -> dict[str, bool]:
    """Run the card with ``model`` at the chosen points (and one pause), score, read strict."""
    pause = next(p for p in read_points(demo) if p.kind is PointKind.PAUSE)
    workdir = linked_points(demo, [*chosen, pause], work)
    card = find_card("llm-text", bundled_cards())
    card = dataclasses.replace(card, params={**card.params, "model": model})
    tallies = run_rollouts(workdir, [card], RunSettings("llm"))
    # The card declines the pause point: recall points only.
    assert (tallies["llm-text"].done, tallies["llm-text"].failed) == (len(chosen), 0)
    run = runs_dir(workdir) / "llm"
    run_scoring(run, ScoreSettings(asr="faster-whisper:tiny.en"))
    scores = read_scores(run, "llm-text")
    assert {s.point_id for s in scores} == {p.point_id for p in chosen}
    return {s.point_id: bool(s.recall and s.recall.strict.correct) for s in scores}


def test_the_gold_answer_scores_every_recall_point(
    demo_points_workdir: Path, recall_points: list[Point], tmp_path: Path
) -> None:
    assert {p.kind for p in recall_points} == {
        PointKind.CONVERSATION_RECALL,
        PointKind.FACT_RECALL,
    }
    correct = _strict(demo_points_workdir, recall_points, tmp_path / "gold", "test-gold:gpt")
    assert sum(correct.values()) / len(correct) == 1.0, correct


def test_a_wrong_answer_scores_none(
    demo_points_workdir: Path, recall_points: list[Point], tmp_path: Path
) -> None:
    correct = _strict(demo_points_workdir, recall_points, tmp_path / "wrong", "test-wrong:gpt")
    assert sum(correct.values()) == 0, correct
