"""Curation with the scripted fake judge: zero scores are never selected; verdicts are cached."""

import json
from pathlib import Path

from pmc.corpus import Channel, SeamlessSource, import_corpus
from pmc.labels._stage import run_labels
from pmc.llm import LlmRequest, ScriptedLlm
from pmc.points import PointKind, run_points
from pmc.points._judge import PROMPT_VERSION
from pmc.points._prompts import identity_prompt
from pmc.testing import participant, write_extracted

KEY = "V00_S0001_I00000001"


def _words(start: float, end: float, n: int, tag: str) -> list[tuple[str, float, float]]:
    step = (end - start) / n
    return [(f"{tag}{i}", start + i * step, start + (i + 0.8) * step) for i in range(n)]


def _workdir(tmp_path: Path) -> Path:
    """Two exchanges: A pauses mid-turn, then each turn end gets a five-word reply."""
    a = [*_words(0.5, 3.5, 8, "a"), *_words(4.5, 6.0, 4, "b"), *_words(9.3, 11.5, 6, "c")]
    b = [*_words(6.3, 9.0, 7, "x"), *_words(11.8, 14.0, 6, "y")]
    write_extracted(
        tmp_path / "src",
        [
            participant(f"{KEY}_P0001", a, duration_s=16.0),
            participant(f"{KEY}_P0002", b, duration_s=16.0, frequency_hz=330.0),
        ],
    )
    workdir = tmp_path / "w"
    import_corpus(SeamlessSource(tmp_path / "src"), workdir, min_duration_s=0)
    run_labels(workdir, asr=None)
    return workdir


def _answer(request: LlmRequest) -> dict[str, object]:
    """Routes each task of the points stage to a scripted answer."""
    if "first 30 seconds" in request.user:
        return {
            "fact": "A said a3",
            "question": "What was the first thing you said?",
            "answer": "a3",
        }
    if "identity prompt" in request.user:
        # A's prompt would hand over the recall answer ("a3"): it must fall back to the template.
        if "for speaker A" in request.user:
            return {"prompt": "You are A. You once said a3 to your friend."}
        return {"prompt": "You are B, an old friend of A."}
    if "specific fact" in request.user:
        return {"specific": True}
    # Pauses score zero (never selected); turn ends are accepted unless A's second turn.
    if "[PAUSE]" in request.user:
        return {"accept": True, "score": 0.0, "reason": "obviously unfinished"}
    rejected = "c5 [TURN END]" in request.user
    return {"accept": not rejected, "score": 0.6, "reason": "fine"}


def test_zero_scores_are_never_selected_and_verdicts_are_cached(tmp_path: Path) -> None:
    workdir = _workdir(tmp_path)
    without, funnel = run_points(workdir, draw=10)
    assert funnel.judge.startswith("none")
    assert sum(p.kind is PointKind.PAUSE for p in without) == 1
    assert sum(p.kind is PointKind.TURN_END for p in without) == 3

    judge = ScriptedLlm(_answer)
    points, funnel = run_points(workdir, draw=10, judge=judge)
    # One pause and three turn ends judged; a fact and its specificity; two identity prompts.
    assert judge.calls == 4 + 2 + 2
    kinds = [p.kind for p in points if p.kind in (PointKind.PAUSE, PointKind.TURN_END)]
    assert kinds == [PointKind.TURN_END, PointKind.TURN_END]
    assert funnel.judge == f"scripted:fake (prompt {PROMPT_VERSION})"
    assert (funnel.capped["pause"], funnel.judged["pause"]) == (1, 0)
    assert (funnel.capped["turn_end"], funnel.judged["turn_end"]) == (3, 2)
    verdict = next(p for p in points if p.kind is PointKind.TURN_END).judge
    assert verdict is not None
    assert (verdict.model, verdict.prompt_version, verdict.score) == (
        "scripted:fake",
        PROMPT_VERSION,
        0.6,
    )
    assert json.loads(verdict.raw)["reason"] == "fine"

    again = ScriptedLlm(_answer)
    rerun, _ = run_points(workdir, draw=10, judge=again)
    assert again.calls == 0
    assert [p.to_dict() for p in rerun] == [p.to_dict() for p in points]
    cache = (workdir / "points" / "judge_cache.jsonl").read_text().splitlines()
    assert len(cache) == 8


def test_llm_fact_becomes_recall_points_and_leaking_prompts_fall_back(tmp_path: Path) -> None:
    workdir = _workdir(tmp_path)
    points, _ = run_points(workdir, draw=10, judge=ScriptedLlm(_answer))
    recall = [p for p in points if p.kind is PointKind.CONVERSATION_RECALL]
    assert recall and all(p.gold_answer == "a3" for p in recall)
    assert all(p.question == "What was the first thing you said?" for p in recall)
    # The history reaches past the turn where the fact was said (A's first turn, to 6.0 s).
    assert all(p.stream_start_conv_s >= 6.0 for p in recall)
    prompts = {p.system: p.identity_prompt for p in points}
    assert prompts[Channel.B] == "You are B, an old friend of A."
    assert prompts[Channel.A] == identity_prompt(Channel.A)


def test_a_question_naming_a_speaker_is_dropped(tmp_path: Path) -> None:
    workdir = _workdir(tmp_path)

    def leaky(request: LlmRequest) -> dict[str, object]:
        if "first 30 seconds" in request.user:
            return {"fact": "x", "question": "What did speaker A say?", "answer": "a3"}
        return _answer(request)

    points, _ = run_points(workdir, draw=10, judge=ScriptedLlm(leaky))
    assert not [p for p in points if p.kind is PointKind.CONVERSATION_RECALL]
