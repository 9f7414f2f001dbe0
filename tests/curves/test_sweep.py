"""Trade-off curves: replayed decisions are the cascade's own, and the curve meets its cards.

The curve passes through the endpointer cards run the ordinary way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pmc import io
from pmc.curves import Curve, read_curves, sweep
from pmc.harness import TRACE_FILE, Run, RunSettings, live_for, run_rollouts, runs_dir
from pmc.points import PointKind, points_dir
from pmc.systems import (
    CascadeSetting,
    ReplyShape,
    bundled_cards,
    find_card,
    heard_windows,
    replay_cascade,
)
from pmc.testing.points import write_points

CARDS = ("endpointer-300", "endpointer-500")
FRAME_S = 0.02
"""The cascade's input frame: one frame is the resolution of a decision's time."""


def trace_times(trace: dict[str, Any]) -> tuple[list[float], list[float], list[float]]:
    """Where the trace says the cascade endpointed, began each reply, and stopped one."""
    t0 = int(trace["t0_ns"])

    def at(o: dict[str, Any]) -> float:
        return round((int(o["arrival_ns"]) - t0) / 1e9, 6)

    outputs = trace["outputs"]
    decided = [at(o) for o in outputs if o["detail"].get("type") == "endpointed"]
    texts = [at(o) for o in outputs if o["kind"] == "text"]  # each reply's text leads it
    stopped = [at(o) for o in outputs if o["kind"] == "interrupted"]
    return decided, texts, stopped


@pytest.mark.parametrize("name", CARDS)
def test_the_replay_decides_as_the_cascade_does(name: str, tmp_path: Path) -> None:
    """Every endpoint, reply start and barge-in of the cascade on the test points, exactly."""
    points = [p for p in write_points(tmp_path) if p.kind is not PointKind.FACT_RECALL]
    card = find_card(name, bundled_cards())
    run_rollouts(tmp_path, [card], RunSettings("ordinary"))
    reply = ReplyShape.of_card(card)
    checked = 0
    for point in points:
        folder = Run(runs_dir(tmp_path) / "ordinary").rollout_dir(name, point.point_id, 0)
        trace = io.read_json(folder / TRACE_FILE)
        decided, started, stopped = trace_times(trace)
        stop_s = float(trace["protocol"]["stop_stream_s"])
        live = live_for(points_dir(tmp_path), point)
        tail_s = stop_s - len(live) / card.sample_rate + 1.0  # past where the harness stopped
        windows = heard_windows(live, card, tail_s)
        replies = [
            r
            for r in replay_cascade(windows, FRAME_S, CascadeSetting.of_card(card), reply)
            if r.decided_s < stop_s
        ]
        assert decided, point.point_id
        assert [round(r.decided_s, 6) for r in replies] == decided, point.point_id
        assert [round(r.starts_s, 6) for r in replies if r.starts_s < stop_s] == started
        cut = [
            round(r.ends_s, 6)
            for r in replies
            if r.ends_s < min(r.starts_s + reply.length_s, stop_s)
        ]
        assert cut == stopped, point.point_id
        checked += len(decided)
    assert checked >= len(points)


def test_the_sweep_writes_a_curve_the_report_reads(tmp_path: Path) -> None:
    write_points(tmp_path)
    card = find_card("endpointer-300", bundled_cards())
    curve = sweep(tmp_path, card, silence_ms=(300, 500, 1500))
    assert [s.silence_ms for s in curve.settings] == [300, 500, 1500]
    assert curve.settings[0].cards == ("endpointer-300",)
    assert curve.settings[1].cards == ("endpointer-500",)
    assert curve.settings[2].cards == ()
    assert all((s.pauses, s.turn_ends) == (1, 2) for s in curve.settings)
    # A longer window decides later, and holds the test point's 1 s pause at 1.5 s.
    latencies = [s.decision_latency_s for s in curve.settings]
    assert None not in latencies and latencies == sorted(latencies)  # type: ignore[type-var]
    assert curve.settings[2].hold_rate == 1.0
    (kept,) = read_curves(tmp_path)
    assert kept == curve
    assert Curve.from_dict(curve.to_dict()) == curve
    rows = (tmp_path / "curves" / "endpointer-300.csv").read_text().splitlines()
    assert rows[0].startswith("silence_ms,threshold,pauses,held,hold_rate") and len(rows) == 4


def test_a_card_that_is_not_the_cascade_cannot_be_swept(tmp_path: Path) -> None:
    from pmc.errors import PmcError

    write_points(tmp_path)
    with pytest.raises(PmcError, match="only endpointer-cascade and pipecat-smart-turn cards"):
        sweep(tmp_path, find_card("never-speak", bundled_cards()))
