"""The history-channel table: a system with the history as text against its audio twin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pmc.points import PointKind
from pmc.report._channel import channel_pairs, channel_table
from pmc.report._data import RunData
from pmc.scoring import (
    RecallScore,
    ReplyScore,
    Score,
    ScoreSettings,
    ScoreStatus,
    StrictVerdict,
)
from pmc.systems import Family, SystemCard

SETTINGS = ScoreSettings()


def _card(
    history: str | None, voice: str = "alloy", adapter: str = "openai-realtime"
) -> SystemCard:
    params: dict[str, Any] = {"voice": voice}
    if history is not None:
        params["history"] = history
    return SystemCard(adapter, adapter, Family.HOSTED, endpoint="wss://x", params=params)


def _recall(system: str, point: str, conv: str, kind: PointKind, correct: bool) -> Score:
    strict = StrictVerdict(kind, correct, ("fox",), ("fox",) if correct else (), 1)
    return Score(
        point, system, 0, kind, conv, ScoreStatus.SCORED, SETTINGS,
        recall=RecallScore("it was fox" if correct else "no idea", strict, ()),
    )  # fmt: skip


def _reply(system: str, point: str, conv: str, f1: float) -> Score:
    return Score(
        point, system, 0, PointKind.TURN_END, conv, ScoreStatus.SCORED, SETTINGS,
        reply=ReplyScore(0.8, 1.0, 5, 1.0, 5, 1.0, 1.0, False, "x", f1, 0.5),
    )  # fmt: skip


def _run(cards: dict[str, SystemCard], scores: dict[str, list[Score]]) -> RunData:
    return RunData(
        Path("run"), "r", tuple(cards), cards, {n: None for n in cards}, {}, scores
    )  # fmt: skip


def test_text_and_audio_twins_are_paired_and_others_are_not() -> None:
    cards = {
        "gpt": _card(None),
        "gpt-audio": _card("audio"),
        "gpt-other-voice-audio": _card("audio", voice="ash"),  # not a twin: another voice
        # no history choice: an adapter not registered here, and a cascade
        "elsewhere-audio": _card("audio", adapter="not-registered-here"),
        "cascade": SystemCard("cascade", "endpointer-cascade", Family.LOCAL),
    }
    assert channel_pairs(_run(cards, {n: [] for n in cards})) == [("gpt", "gpt-audio")]
    alone = {"gpt": _card("text")}
    assert channel_table(_run(alone, {"gpt": []}), seed=0) is None


def test_recall_and_similarity_are_compared_on_shared_points() -> None:
    cards = {"gpt": _card("text"), "gpt-audio": _card("audio")}
    conv, fact = PointKind.CONVERSATION_RECALL, PointKind.FACT_RECALL
    text = [
        _recall("gpt", "c1", "a", conv, False),
        _recall("gpt", "c2", "b", conv, False),
        _recall("gpt", "c3", "b", conv, True),
        _recall("gpt", "f1", "a", fact, True),
        _reply("gpt", "t1", "a", 0.2),
        _reply("gpt", "t2", "b", 0.4),
    ]
    audio = [
        _recall("gpt-audio", "c1", "a", conv, True),
        _recall("gpt-audio", "c2", "b", conv, True),
        _recall("gpt-audio", "c3", "b", conv, True),
        _recall("gpt-audio", "c9", "b", conv, True),  # the text system never met it: left out
        _recall("gpt-audio", "f1", "a", fact, True),
        _reply("gpt-audio", "t1", "a", 0.3),
        _reply("gpt-audio", "t2", "b", 0.6),
    ]
    table = channel_table(_run(cards, {"gpt": text, "gpt-audio": audio}), seed=0, resamples=200)
    assert table is not None
    rows = {r[2]: dict(zip(table.columns, r, strict=True)) for r in table.rows}
    recall = rows["conversation recall (strict)"]
    assert (recall["paired points"], recall["text"], recall["audio"]) == (3, 0.333, 1.0)
    assert str(recall["audio - text [95% CI]"]).startswith("+0.67 [")
    assert str(rows["fact recall (strict)"]["audio - text [95% CI]"]).startswith("+0.00")
    f1 = rows["turn-end token F1"]
    assert (f1["paired points"], f1["text"], f1["audio"]) == (2, 0.3, 0.45)
    assert str(f1["audio - text [95% CI]"]).startswith("+0.15 [")
    assert str(rows["turn-end cosine"]["audio - text [95% CI]"]).startswith("+0.00")
