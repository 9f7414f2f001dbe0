"""Rollout-to-rollout agreement: Fleiss' kappa, the latency ICC, the nested bootstrap, the table."""

from __future__ import annotations

from pathlib import Path

import pytest

from pmc.points import PointKind
from pmc.report._aggregate import metrics_for
from pmc.report._data import RunData
from pmc.report._repeats import (
    UNDEFINED,
    agreement_table,
    fleiss_kappa,
    nested_bootstrap,
    spread,
)
from pmc.scoring import PauseOutcome, PauseScore, ReplyScore, Score, ScoreSettings, ScoreStatus
from pmc.systems import Family, SystemCard

CARD = SystemCard("s", "endpointer-cascade", Family.LOCAL)

SETTINGS = ScoreSettings()


def test_fleiss_kappa_matches_hand_computed_values() -> None:
    # Agreement per item 1, 0, 1, 1 -> 0.75; category shares 3/8 and 5/8 -> chance 34/64.
    ratings = [["a", "a"], ["a", "b"], ["b", "b"], ["b", "b"]]
    assert fleiss_kappa(ratings) == pytest.approx((0.75 - 34 / 64) / (1 - 34 / 64))
    assert fleiss_kappa([["a", "a", "a"], ["b", "b", "b"]]) == 1.0
    assert fleiss_kappa([["x", "x", "x"], ["x", "x", "x"]]) is None  # one outcome throughout
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa([["a", "b"], ["a"]])


def test_the_latency_icc_splits_spread_between_and_within_points() -> None:
    # Means 1.5, 3.5, 5.5: MSB = 2 * 8 / 2 = 8, MSW = 0.5, ICC = 7.5 / 8.5.
    s = spread([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    assert s.icc == pytest.approx(7.5 / 8.5)
    assert s.within_sd == pytest.approx(0.5**0.5)
    assert s.between_sd == pytest.approx(((8 - 0.5) / 2) ** 0.5)
    assert spread([[1.0, 1.0], [3.0, 3.0]]).icc == 1.0  # every rollout the same
    assert spread([[1.0, 3.0], [1.0, 3.0]]).icc == -1.0  # all the spread is within points


def _pause(point: str, conv: str, k: int, outcome: PauseOutcome, system: str = "s") -> Score:
    return Score(
        point, system, k, PointKind.PAUSE, conv, ScoreStatus.SCORED, SETTINGS,
        pause=PauseScore(outcome, None if outcome is PauseOutcome.SILENT else 0.4, False, False,
                         False),
    )  # fmt: skip


def _reply(point: str, conv: str, k: int, latency: float) -> Score:
    return Score(
        point, "s", k, PointKind.TURN_END, conv, ScoreStatus.SCORED, SETTINGS,
        reply=ReplyScore(latency, 1.0, 5, 1.0, 5, 1.0, 1.0, False, "x", 0.5),
    )  # fmt: skip


def test_the_nested_bootstrap_varies_rollouts_within_points() -> None:
    takeover = metrics_for(PointKind.PAUSE)["takeover"][0]
    # One conversation, one point: resampling conversations alone could never move the value;
    # resampling its two rollouts (one takeover, one silence) must.
    scores = [
        _pause("p1", "c", 0, PauseOutcome.TAKEOVER),
        _pause("p1", "c", 1, PauseOutcome.SILENT),
    ]
    value = nested_bootstrap(scores, takeover, seed=0, resamples=400)
    assert value.estimate == 0.5 and value.n == 2
    assert value.ci_low == 0.0 and value.ci_high == 1.0


def _run(scores: dict[str, list[Score]]) -> RunData:
    return RunData(
        Path("run"), "r", tuple(scores), {n: CARD for n in scores}, {n: None for n in scores}, {},
        scores,
    )  # fmt: skip


def test_the_table_has_a_row_per_system_and_kind_run_twice_or_more() -> None:
    always = [
        _pause(f"p{i}", f"c{i % 2}", k, PauseOutcome.TAKEOVER, "always") for i in range(4)
        for k in range(3)
    ]  # fmt: skip
    mixed = [
        _pause("p0", "c0", 0, PauseOutcome.SILENT, "mixed"),
        _pause("p0", "c0", 1, PauseOutcome.SILENT, "mixed"),
        _pause("p0", "c0", 2, PauseOutcome.TAKEOVER, "mixed"),
        _pause("p1", "c1", 0, PauseOutcome.AFTER, "mixed"),
        _pause("p1", "c1", 1, PauseOutcome.AFTER, "mixed"),
        _pause("p1", "c1", 2, PauseOutcome.AFTER, "mixed"),
        _pause("p2", "c1", 0, PauseOutcome.SILENT, "mixed"),  # one rollout short: left out
    ]
    once = [_pause("p0", "c0", 0, PauseOutcome.SILENT, "once")]
    table = agreement_table(_run({"always": always, "mixed": mixed, "once": once}), seed=0,
                            resamples=50)  # fmt: skip
    assert table is not None
    rows = [dict(zip(table.columns, r, strict=True)) for r in table.rows]
    assert [(r["system"], r["kind"]) for r in rows] == [("always", "pause"), ("mixed", "pause")]
    assert (rows[0]["rollouts K"], rows[0]["points with all K"]) == (3, 4)
    assert rows[0]["all K agree"] == 1.0 and rows[0]["Fleiss' kappa"] == UNDEFINED
    assert rows[0]["estimate [95% CI]"] == "1.00 [1.00, 1.00]"
    assert (rows[1]["points with all K"], rows[1]["all K agree"]) == (2, 0.5)
    # Items (S,S,T) and (A,A,A): agreement (1/3 + 1) / 2; shares S 2/6, T 1/6, A 3/6.
    chance = (2 / 6) ** 2 + (1 / 6) ** 2 + (3 / 6) ** 2
    assert rows[1]["Fleiss' kappa"] == round((2 / 3 - chance) / (1 - chance), 3)
    assert agreement_table(_run({"once": once}), seed=0) is None


def test_turn_end_rows_give_the_latency_spread() -> None:
    scores = [
        _reply(f"t{i}", f"c{i}", k, latency)
        for i, pair in enumerate([(1.0, 2.0), (3.0, 4.0), (5.0, 6.0)])
        for k, latency in enumerate(pair)
    ]
    table = agreement_table(_run({"s": scores}), seed=0, resamples=50)
    assert table is not None
    (row,) = [dict(zip(table.columns, r, strict=True)) for r in table.rows]
    assert row["latency ICC"] == round(7.5 / 8.5, 3)
    assert row["within-point SD (s)"] == round(0.5**0.5, 3)
    assert row["all K agree"] == 1.0  # every rollout replied with words
