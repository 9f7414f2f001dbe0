"""Latency parts on traces built here: each moment is placed by hand."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from pmc.asr import TimedWord
from pmc.points import Point, PointKind
from pmc.report._latency import median_interval, parts_of
from pmc.scoring import Evidence, ReplyScore, Score, ScoreStatus
from pmc.systems import LatencyMark
from tests.report.test_analyses import SETTINGS, point

RATE = 24_000
BOUNDARY_S = 1.0
T0_NS = 5_000_000_000


def at(stream_s: float) -> int:
    return T0_NS + round(stream_s * 1e9)


def audio(stream_s: float, seconds: float) -> dict[str, Any]:
    return {"kind": "audio", "arrival_ns": at(stream_s), "samples": round(seconds * RATE)}


def signal(stream_s: float, kind: str) -> dict[str, Any]:
    return {"kind": "signal", "arrival_ns": at(stream_s), "detail": {"type": kind}}


def mark(detail: Mapping[str, Any]) -> LatencyMark | None:
    return {"stopped": LatencyMark.ENDPOINTED, "asked": LatencyMark.REQUESTED}.get(
        str(detail.get("type"))
    )


def turn_end(audible_s: float, word_s: float) -> tuple[Point, Score]:
    """A turn end at 1 s whose reply is audible from ``audible_s`` and worded from ``word_s``."""
    p = point("t", PointKind.TURN_END, "c", BOUNDARY_S, BOUNDARY_S)
    evidence = (
        Evidence(audible_s, audible_s + 0.1, (), None),  # a breath
        Evidence(word_s, word_s + 1.0, (TimedWord("yes", word_s, word_s + 0.3, 0.9),), word_s),
    )
    reply = ReplyScore(word_s - BOUNDARY_S, 1.0, 1, 1.0, 1, 1.0, 1.0, False, "yes")
    score = Score(
        "t", "s", 0, p.kind, "c", ScoreStatus.SCORED, SETTINGS, evidence=evidence, reply=reply
    )
    return p, score


def test_every_moment_splits_the_latency_and_the_parts_sum_to_it() -> None:
    p, score = turn_end(audible_s=2.3, word_s=2.5)
    outputs = [
        audio(0.2, 0.5),  # an earlier reply, played out long before
        signal(0.5, "stopped"),  # before the boundary: not this turn's decision
        signal(1.3, "stopped"),
        signal(1.35, "stopped"),  # the first after the boundary counts
        signal(1.8, "asked"),
        audio(2.1, 0.05),
        audio(2.11, 0.05),  # faster than it plays: the same message burst
        audio(2.2, 1.0),
    ]
    found = parts_of(score, p, {"t0_ns": T0_NS, "outputs": outputs}, mark, RATE)
    assert found is not None
    assert (found.endpointed_s, found.requested_s) == pytest.approx((0.3, 0.8))
    assert found.first_message_s == pytest.approx(1.1)
    assert (found.first_audible_s, found.latency_s) == pytest.approx((1.3, 1.5))
    assert found.parts() == pytest.approx(
        {"endpointing": 0.3, "wait": 0.5, "generation": 0.3, "lead_in": 0.2, "first_word": 0.2}
    )
    present = [v for v in found.parts().values() if v is not None]
    assert sum(present) == pytest.approx(found.latency_s, abs=1e-12)


def test_a_moment_the_system_does_not_give_falls_to_the_next_part() -> None:
    p, score = turn_end(audible_s=2.0, word_s=2.0)
    found = parts_of(score, p, {"t0_ns": T0_NS, "outputs": [audio(1.7, 0.5)]}, mark, RATE)
    assert found is not None
    assert found.parts() == pytest.approx(
        {"endpointing": None, "wait": None, "generation": 0.7, "lead_in": 0.3, "first_word": 0.0}
    )


def test_a_continuous_stream_has_no_first_message() -> None:
    """A full-duplex model sends audio every 80 ms whether it speaks or not."""
    p, score = turn_end(audible_s=1.9, word_s=2.0)
    frames = [audio(i * 0.08, 0.08) for i in range(40)]
    found = parts_of(score, p, {"t0_ns": T0_NS, "outputs": frames}, mark, RATE)
    assert found is not None and found.first_message_s is None
    assert found.parts()["lead_in"] == pytest.approx(0.9)  # from the boundary


def test_a_reply_under_way_at_the_boundary_is_left_out() -> None:
    p, score = turn_end(audible_s=0.8, word_s=0.9)
    assert parts_of(score, p, {"t0_ns": T0_NS, "outputs": []}, mark, RATE) is None


def test_the_median_interval_resamples_conversations() -> None:
    values = [("a", 1.0), ("a", 1.0), ("b", 3.0), ("c", 2.0)]
    median, low, high = median_interval(values, seed=0, resamples=500)
    assert median == pytest.approx(1.5)
    assert median is not None and low is not None and high is not None
    assert 1.0 <= low <= median <= high <= 3.0
    assert median_interval([], 0, 10) == (None, None, None)
