"""Rollout-to-rollout agreement: does a system do the same thing at a point when run again?

The paper reports one rollout per point (section 6). With ``pmc run --rollouts K`` (K >= 2) a
system meets every point K times; this table says, per system and point kind, how often all K
rollouts agree (pause outcome, whether a turn end got a worded reply, whether a recall answer
was right), Fleiss' kappa over those outcomes, how much of the turn-end latency's spread lies
between points rather than between rollouts of one point (an intraclass correlation), and each
kind's headline value over all K rollouts with an interval that resamples conversations and,
within each point, its rollouts. docs/architecture.md "Reporting" says how each is computed.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from pmc.points import PointKind
from pmc.report._aggregate import (
    RECALL_PREFIX_S,
    RESAMPLES,
    Value,
    cell,
    metrics_for,
    reply_field,
)
from pmc.report._data import RunData
from pmc.scoring import PauseOutcome, Score, ScoreStatus
from pmc.table import Cell, Table

UNDEFINED = "undefined (one outcome throughout)"
"""Fleiss' kappa when every rollout at every point gave the same outcome: chance agreement is
then perfect, and agreement beyond it is 0/0."""
HEADLINE = {
    PointKind.PAUSE: "takeover",
    PointKind.TURN_END: "latency_s",
    PointKind.CONVERSATION_RECALL: "strict",
    PointKind.FACT_RECALL: "strict",
    PointKind.BARGE_IN: "yielded",
    PointKind.BACKCHANNEL: "yielded",
}
"""The value each kind's row gives over all rollouts: the main table's first question."""


def outcome(score: Score) -> str:
    """What a rollout did, as a category to agree on."""
    if score.kind is PointKind.PAUSE:
        return (score.pause.outcome if score.pause else PauseOutcome.SILENT).value
    if score.kind is PointKind.TURN_END:
        return "reply" if score.reply is not None and score.reply.words else "no reply"
    if score.kind.talks_over:
        clip = score.clip
        if clip is None or not clip.talking:
            return "not reached"
        return "yielded" if clip.yielded else "talked on"
    return "correct" if score.recall is not None and score.recall.strict.correct else "wrong"


def fleiss_kappa(per_point: Sequence[Sequence[str]]) -> float | None:
    """Fleiss' kappa of K raters (rollouts) per item (point); None where it is undefined.

    Every item must have the same number of ratings, at least two.
    """
    if not per_point:
        return None
    k = len(per_point[0])
    if k < 2 or any(len(r) != k for r in per_point):
        raise ValueError("Fleiss' kappa needs the same number (>= 2) of ratings for every item")
    n = len(per_point)
    counts = [Counter(r) for r in per_point]
    agreement = sum((sum(c * c for c in cs.values()) - k) / (k * (k - 1)) for cs in counts) / n
    totals: Counter[str] = Counter()
    for cs in counts:
        totals.update(cs)
    chance = sum((t / (n * k)) ** 2 for t in totals.values())
    if chance >= 1.0:
        return None
    return (agreement - chance) / (1.0 - chance)


@dataclass(frozen=True)
class Spread:
    """One-way random-effects decomposition of a value measured K times at each of n points.

    Attributes:
        icc: ICC(1): the share of the variance that lies between points (None if undefined).
        within_sd: Standard deviation between rollouts of one point.
        between_sd: Standard deviation of the points' own values (the variance component).
        points: Points with all K values.
    """

    icc: float | None
    within_sd: float | None
    between_sd: float | None
    points: int


def spread(groups: Sequence[Sequence[float]]) -> Spread:
    """ICC(1) and the within- and between-point spread of equally sized groups."""
    n = len(groups)
    if n < 2 or len(groups[0]) < 2:
        return Spread(None, None, None, n)
    k = len(groups[0])
    data = np.asarray(groups, dtype=float)
    means = data.mean(axis=1)
    msb = k * float(((means - data.mean()) ** 2).sum()) / (n - 1)
    msw = float(((data - means[:, None]) ** 2).sum()) / (n * (k - 1))
    denominator = msb + (k - 1) * msw
    icc = (msb - msw) / denominator if denominator > 0 else None
    return Spread(icc, math.sqrt(msw), math.sqrt(max(0.0, (msb - msw) / k)), n)


def nested_bootstrap(
    scores: Sequence[Score],
    metric: Callable[[Sequence[Score]], float | None],
    seed: int,
    resamples: int = RESAMPLES,
) -> Value:
    """``metric`` over every rollout, with a 95% interval from a two-stage bootstrap.

    Conversations are drawn with replacement, then, at each point of a drawn conversation, its
    rollouts are drawn with replacement: both the points and the repeats vary.
    """
    tree: dict[str, dict[str, list[Score]]] = {}
    for s in scores:
        tree.setdefault(s.conversation_id, {}).setdefault(s.point_id, []).append(s)
    names = sorted(tree)
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(resamples if names else 0):
        sample: list[Score] = []
        for c in rng.integers(0, len(names), len(names)):
            for rollouts in tree[names[c]].values():
                sample.extend(rollouts[i] for i in rng.integers(0, len(rollouts), len(rollouts)))
        value = metric(sample)
        if value is not None:
            draws.append(value)
    low = high = None
    if draws:
        low, high = (float(v) for v in np.percentile(draws, [2.5, 97.5]))
    return Value(metric(scores), len(scores), ci_low=low, ci_high=high)


@dataclass(frozen=True)
class Agreement:
    """One system at one kind over its K rollouts per point."""

    system: str
    kind: PointKind
    rollouts: int
    points: int
    all_agree: float | None
    kappa: float | None
    latency: Spread | None
    headline: Value


def agreement(data: RunData, system: str, kind: PointKind, seed: int, resamples: int) -> Agreement:
    """How a system's K rollouts at each point of ``kind`` agree (recall: the 120 s prefix)."""
    mine = [
        s
        for s in data.scores[system]
        if s.kind is kind and s.status is not ScoreStatus.TRANSPORT_ERROR
    ]
    if kind in (PointKind.CONVERSATION_RECALL, PointKind.FACT_RECALL):
        mine = [s for s in mine if data.points[s.point_id].prefix_s == RECALL_PREFIX_S]
    k = max((s.rollout for s in mine), default=-1) + 1
    by_point: dict[str, list[Score]] = {}
    for s in mine:
        by_point.setdefault(s.point_id, []).append(s)
    complete = [sorted(r, key=lambda s: s.rollout) for r in by_point.values() if len(r) == k]
    outcomes = [[outcome(s) for s in r] for r in complete]
    all_agree = sum(len(set(o)) == 1 for o in outcomes) / len(outcomes) if outcomes else None
    latency = None
    if kind is PointKind.TURN_END:
        latency_of = reply_field("latency_s")
        values = [[latency_of(s) for s in r] for r in complete]
        latency = spread([[v for v in vs if v is not None] for vs in values if None not in vs])
    metric = metrics_for(kind)[HEADLINE[kind]][0]
    headline = nested_bootstrap([s for r in complete for s in r], metric, seed, resamples)
    kappa = fleiss_kappa(outcomes) if k >= 2 else None
    return Agreement(system, kind, k, len(complete), all_agree, kappa, latency, headline)


def _number(value: float | None, digits: int = 3) -> Cell:
    return None if value is None else round(value, digits)


def agreement_table(data: RunData, seed: int, resamples: int = RESAMPLES) -> Table | None:
    """Every system run with two rollouts or more, per point kind; None when none was."""
    rows: list[tuple[Cell, ...]] = []
    for system in data.systems:
        if max((s.rollout for s in data.scores[system]), default=0) < 1:
            continue
        for kind in data.kinds(system):
            a = agreement(data, system, kind, seed, resamples)
            if a.rollouts < 2 or not a.points:
                continue
            kappa: Cell = _number(a.kappa) if a.kappa is not None else UNDEFINED
            spread_cells: tuple[Cell, ...] = (None, None, None)
            if a.latency is not None:
                s = a.latency
                spread_cells = (_number(s.icc), _number(s.within_sd), _number(s.between_sd))
            rows.append(
                (
                    data.label(system),
                    kind.value,
                    a.rollouts,
                    a.points,
                    _number(a.all_agree),
                    kappa,
                    *spread_cells,
                    HEADLINE[kind],
                    cell(a.headline),
                )
            )
    if not rows:
        return None
    return Table(
        "rollout_agreement",
        "Rollout-to-rollout agreement (all K rollouts of each point)",
        (
            "system",
            "kind",
            "rollouts K",
            "points with all K",
            "all K agree",
            "Fleiss' kappa",
            "latency ICC",
            "within-point SD (s)",
            "between-point SD (s)",
            "value over all rollouts",
            "estimate [95% CI]",
        ),
        tuple(rows),
        note="Uses every rollout of each point (the other tables use rollout 0 only). Outcomes: "
        "the pause outcome; at turn ends, whether a worded reply came; at recall (120 s of "
        "history), whether the strict matcher found the answer. Kappa is undefined where one "
        "outcome held throughout. Latency ICC: the share of turn-end latency variance between "
        "points, over points where every rollout replied. The interval resamples "
        "conversations, then the rollouts within each point.",
    )
