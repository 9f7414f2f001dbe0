"""LLM verdicts on recall answers, added to scores outside the transcription workers.

Judges are network calls: they run in the main process, each verdict cached in
``scores/judge_cache.jsonl`` by (item, model, prompt version), so a rerun asks nothing again.
A verdict that cannot be had for one answer is reported and leaves that answer unjudged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from pmc.harness import Run
from pmc.llm import JudgeCache, create_client
from pmc.points import Point, read_points
from pmc.scoring._recall_judge import RecallItem, RecallJudgeError, judge_recall
from pmc.scoring._types import Score

JUDGE_CACHE_FILE = "judge_cache.jsonl"


def make_judge(
    spec: str, run_dir: Path, warn: Callable[[str], None] = print
) -> Callable[[Score], Score]:
    """A hook that adds ``spec``'s verdict to a recall score."""
    run = Run(run_dir)
    client = create_client(spec)
    cache = JudgeCache(run.scores_dir / JUDGE_CACHE_FILE)
    points: dict[str, Point] = {p.point_id: p for p in read_points(run.workdir)}

    def judge(score: Score) -> Score:
        if score.recall is None:
            return score
        point = points[score.point_id]
        item = RecallItem(
            point.point_id,
            score.rollout,
            point.kind,
            point.question,
            point.gold_answer,
            score.recall.transcript,
        )
        try:
            verdict = judge_recall(item, client, cache)
        except RecallJudgeError as exc:
            warn(str(exc))
            return score
        return replace(score, recall=replace(score.recall, judges=(verdict,)))

    return judge
