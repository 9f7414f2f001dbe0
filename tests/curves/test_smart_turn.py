"""Smart Turn's curve: the replay decides where the card does, and the curve meets its cards.

The two bundled Smart Turn cards (VAD stop 0.2 s and 0.1 s) run the ordinary way on the test
points; replaying their input through Pipecat's analyzers gives every turn end they made within
one input frame, and every reply start and barge-in with it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pmc import io
from pmc.curves import read_curves, sweep
from pmc.harness import TRACE_FILE, Run, RunSettings, live_for, run_rollouts, runs_dir
from pmc.points import PointKind, points_dir, read_points
from pmc.systems import (
    SmartTurnReplayer,
    SmartTurnSetting,
    adapter_params,
    bundled_cards,
    find_card,
    heard_pcm,
    smart_turn_reply,
)
from pmc.testing.points import write_points

CARDS = ("smart-turn", "smart-turn-fast")
FRAME_S = 0.02
"""The cards' input frame: the resolution of a decision's time."""


def trace_times(trace: dict[str, Any]) -> tuple[list[float], list[float], list[float]]:
    """Turn ends, reply starts and barge-ins of a trace (stream clock).

    The first two less the model time their verdict took: the replay's model time differs.
    """
    t0 = int(trace["t0_ns"])
    decided, model = [], []
    for o in trace["outputs"]:
        detail = o["detail"]
        at = (int(o["arrival_ns"]) - t0) / 1e9
        if detail.get("type") == "smart_turn" and detail.get("complete") is True:
            decided.append(at)
            model.append(float(detail["inference_ms"]) / 1000)
        elif detail.get("type") == "smart_turn_timeout":
            decided.append(at)
            model.append(0.0)
    texts = [(int(o["arrival_ns"]) - t0) / 1e9 for o in trace["outputs"] if o["kind"] == "text"]
    started = [s - m for s, m in zip(texts, model, strict=False)]  # each reply's text leads it
    stopped = [
        (int(o["arrival_ns"]) - t0) / 1e9 for o in trace["outputs"] if o["kind"] == "interrupted"
    ]
    return [d - m for d, m in zip(decided, model, strict=True)], started, stopped


def inference_s(trace: dict[str, Any]) -> list[float]:
    """Each Smart Turn verdict's inference time in the card's run, in order (seconds)."""
    return [
        float(o["detail"]["inference_ms"]) / 1000
        for o in trace["outputs"]
        if o["detail"].get("type") == "smart_turn"
    ]


@pytest.fixture(scope="module")
def ordinary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The two Smart Turn cards run the ordinary way on the test points."""
    work = tmp_path_factory.mktemp("smart-turn-curve")
    write_points(work)
    cards = [find_card(name, bundled_cards()) for name in CARDS]
    tallies = run_rollouts(work, cards, RunSettings("ordinary"))
    assert {n: t.failed for n, t in tallies.items()} == dict.fromkeys(CARDS, 0)
    return work


@pytest.mark.parametrize("name", CARDS)
def test_the_replay_ends_each_turn_where_the_card_did(ordinary: Path, name: str) -> None:
    card = find_card(name, bundled_cards())
    replayer = SmartTurnReplayer(card)
    setting = SmartTurnSetting.of_card(card)
    reply = smart_turn_reply(card)
    checked = 0
    for point in (p for p in read_points(ordinary) if p.kind is not PointKind.FACT_RECALL):
        folder = Run(runs_dir(ordinary) / "ordinary").rollout_dir(name, point.point_id, 0)
        trace = io.read_json(folder / TRACE_FILE)
        stop_s = float(trace["protocol"]["stop_stream_s"])
        live = live_for(points_dir(ordinary), point)
        frames = heard_pcm(live, card, stop_s - len(live) / card.sample_rate + 1.0)
        states = replayer.vad_states(frames, setting.vad_stop_s)
        # Each verdict takes the inference time the card's run recorded for it: measured again,
        # on a loaded machine it differed enough to change which branch either took.
        replies = replayer.replay(
            frames,
            states,
            FRAME_S,
            setting.threshold,
            reply,
            adapter_params(card).interruptions,
            model_s=inference_s(trace),
        )
        timed = [
            (r, m) for r, m in zip(replies, replayer.model_s, strict=True) if r.decided_s < stop_s
        ]
        decided, started, stopped = trace_times(trace)
        assert decided, (name, point.point_id)
        mine = (
            [r.decided_s - m for r, m in timed],
            [r.starts_s - m for r, m in timed if r.starts_s < stop_s],
            [r.ends_s for r, _ in timed if r.ends_s < min(r.starts_s + reply.length_s, stop_s)],
        )
        for ours, theirs in zip(mine, (decided, started, stopped), strict=True):
            assert len(ours) == len(theirs), (name, point.point_id, mine, theirs)
            for a, b in zip(ours, theirs, strict=True):
                assert abs(a - b) <= FRAME_S, (name, point.point_id, mine, theirs)
        checked += len(decided)
    assert checked >= 3
    assert replayer.inferences >= 1


def test_the_sweep_meets_both_cards_and_a_stricter_model_holds_more(ordinary: Path) -> None:
    card = find_card("smart-turn", bundled_cards())
    curve = sweep(ordinary, card, silence_ms=(100, 200, 600), thresholds=(0.5, 0.999))
    assert [(s.silence_ms, s.threshold) for s in curve.settings] == [
        (100, 0.5),
        (200, 0.5),
        (600, 0.5),
        (100, 0.999),
        (200, 0.999),
        (600, 0.999),
    ]
    assert [s.cards for s in curve.settings] == [
        ("smart-turn-fast",),
        ("smart-turn",),
        (),
        (),
        (),
        (),
    ]
    assert all((s.pauses, s.turn_ends) == (1, 2) for s in curve.settings)
    # A model that almost never says complete leaves each turn to its 3 s silence fallback:
    # the test point's 1 s pause is held, and the turn ends decide 3 s after the VAD's stop.
    for strict in curve.settings[3:]:
        assert strict.hold_rate == 1.0
        assert strict.decision_latency_s is not None and strict.decision_latency_s > 3.0
    lax = [s.decision_latency_s for s in curve.settings[:3]]
    assert all(x is not None and x < 3.0 for x in lax), lax
    (kept,) = read_curves(ordinary)
    assert kept == curve
