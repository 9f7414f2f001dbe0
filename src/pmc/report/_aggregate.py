"""The main table's values (paper Table 3) and their bootstrap intervals (Table 14).

Per system and per point kind, never pooled across kinds. Rates are over rollouts; latencies,
ratios and similarities are medians with interquartile ranges over rollouts with words
(docs/architecture.md "Metrics", "Reporting"). Only rollout 0 of each point is reported (paper
section 3.4). Failed rollouts are left out and counted apart; rollouts without audio count as silent
(pauses) or as replies without words (turn ends), which is what the system did.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pmc.points import PointKind
from pmc.report._resample import Counts, draw_counts, resampled_medians, resampled_rates
from pmc.scoring import ClipScore, PauseOutcome, Score, ScoreStatus, YieldScore

RESAMPLES = 2000
"""Bootstrap resamples of conversations (paper appendix E, Table 14)."""
RECALL_PREFIX_S = 120.0
"""The main table reports recall after 120 s of history (paper Table 3)."""


@dataclass(frozen=True)
class Value:
    """One cell of the main table.

    Attributes:
        estimate: The rate or median (None where nothing qualifies).
        n: Rollouts it is computed over.
        q1: Lower quartile (medians only).
        q3: Upper quartile (medians only).
        ci_low: 2.5th percentile of the bootstrap.
        ci_high: 97.5th percentile of the bootstrap.
    """

    estimate: float | None
    n: int
    q1: float | None = None
    q3: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form, rounded for reading."""
        return {k: _round(v) for k, v in self.__dict__.items()}


def _round(value: float | int | None) -> float | int | None:
    return round(value, 4) if isinstance(value, float) else value


def scored(scores: Sequence[Score]) -> list[Score]:
    """Rollout 0 of each point, without transport failures."""
    return [s for s in scores if s.rollout == 0 and s.status is not ScoreStatus.TRANSPORT_ERROR]


@dataclass(frozen=True)
class _Rate:
    """The share of rollouts whose ``pick`` is true, over those where it is not None."""

    pick: Callable[[Score], bool | None]

    def __call__(self, scores: Sequence[Score]) -> float | None:
        flags = [f for f in (self.pick(s) for s in scores) if f is not None]
        return sum(flags) / len(flags) if flags else None

    def resampled(self, groups: list[list[Score]], counts: Counts) -> list[float]:
        flags = [[f for f in (self.pick(s) for s in g) if f is not None] for g in groups]
        return resampled_rates([sum(f) for f in flags], [len(f) for f in flags], counts)


@dataclass(frozen=True)
class _Median:
    """The median of ``pick`` over the rollouts where it is not None."""

    pick: Callable[[Score], float | None]

    def __call__(self, scores: Sequence[Score]) -> float | None:
        values = _values(scores, self.pick)
        return float(np.median(values)) if values else None

    def resampled(self, groups: list[list[Score]], counts: Counts) -> list[float]:
        values = [_values(g, self.pick) for g in groups]
        where = [i for i, vs in enumerate(values) for _ in vs]
        return resampled_medians([v for vs in values for v in vs], where, counts)


Metric = _Rate | _Median
"""A main-table statistic over a list of rollouts, and over each bootstrap resample of them."""


def _share(outcome: PauseOutcome) -> Metric:
    """The share of rollouts whose pause ended in ``outcome`` (no pause score: silent)."""
    return _Rate(lambda s: (s.pause.outcome if s.pause else PauseOutcome.SILENT) is outcome)


def _values(scores: Sequence[Score], pick: Callable[[Score], float | None]) -> list[float]:
    return [v for v in (pick(s) for s in scores) if v is not None]


def _median(pick: Callable[[Score], float | None]) -> Metric:
    return _Median(pick)


def _rate(pick: Callable[[Score], bool | None]) -> Metric:
    return _Rate(pick)


def _takeover_latency(s: Score) -> float | None:
    return s.pause.latency_s if s.pause else None


def reply_field(field: str) -> Callable[[Score], float | None]:
    def pick(s: Score) -> float | None:
        if s.reply is None or not s.reply.words:
            return None
        value = getattr(s.reply, field)
        return None if value is None else float(value)

    return pick


def _censored(s: Score) -> bool:
    return bool(s.reply and s.reply.censored)


def strict_correct(s: Score) -> bool | None:
    return s.recall.strict.correct if s.recall else False


def _talked_over(s: Score) -> bool:
    return s.talk_over is not None


def _talk_over_s(s: Score) -> float | None:
    return s.talk_over.duration_s if s.talk_over else None


def _resumption(s: Score) -> YieldScore | None:
    return s.pause.resumption if s.pause else None


def _yielded_at_resumption(s: Score) -> bool | None:
    resumption = _resumption(s)
    return None if resumption is None else resumption.yielded


def _resumption_stop_s(s: Score) -> float | None:
    resumption = _resumption(s)
    return None if resumption is None else resumption.stop_latency_s


TALK_OVER_METRICS: dict[str, tuple[Metric, Callable[[Score], float | None] | None]] = {
    "talked_over": (_rate(_talked_over), None),
    "talk_over_s": (_median(_talk_over_s), _talk_over_s),
}
"""At every kind: the share of rollouts where the system started talking while the person's
live turn went on, and how long it talked over them (docs/architecture.md "Metrics")."""
PAUSE_METRICS: dict[str, tuple[Metric, Callable[[Score], float | None] | None]] = {
    "silent": (_share(PauseOutcome.SILENT), None),
    "takeover": (_share(PauseOutcome.TAKEOVER), None),
    "after": (_share(PauseOutcome.AFTER), None),
    "takeover_latency_s": (_median(_takeover_latency), _takeover_latency),
    "yielded_at_resumption": (_rate(_yielded_at_resumption), None),
    "resumption_stop_s": (_median(_resumption_stop_s), _resumption_stop_s),
    **TALK_OVER_METRICS,
}
"""Each metric, and for medians the per-rollout value its quartiles come from."""
REPLY_METRICS: dict[str, tuple[Metric, Callable[[Score], float | None] | None]] = {
    "latency_s": (_median(reply_field("latency_s")), reply_field("latency_s")),
    "censored": (_rate(_censored), None),
    "duration_ratio": (_median(reply_field("duration_ratio")), reply_field("duration_ratio")),
    "word_ratio": (_median(reply_field("word_ratio")), reply_field("word_ratio")),
    "token_f1": (_median(reply_field("token_f1")), reply_field("token_f1")),
    "cosine": (_median(reply_field("cosine")), reply_field("cosine")),
    **TALK_OVER_METRICS,
}
RECALL_METRICS: dict[str, tuple[Metric, Callable[[Score], float | None] | None]] = {
    "strict": (_rate(strict_correct), None),
    **TALK_OVER_METRICS,
}


def talking_clip(s: Score) -> ClipScore | None:
    """The clip's score where the system was talking when it came (the point was reached)."""
    return s.clip if s.clip is not None and s.clip.talking else None


def _reached(s: Score) -> bool:
    return talking_clip(s) is not None


def clip_yielded(s: Score) -> bool | None:
    clip = talking_clip(s)
    return None if clip is None else clip.yielded


def clip_stop_s(s: Score) -> float | None:
    clip = talking_clip(s)
    return None if clip is None else clip.stop_latency_s


def _over_clip_s(s: Score) -> float | None:
    clip = talking_clip(s)
    return None if clip is None else clip.talk_over_s


def _spoke_again(s: Score) -> bool | None:
    clip = talking_clip(s)
    return clip.spoke_again if clip is not None and clip.yielded else None


def _person_s(s: Score) -> float | None:
    clip = talking_clip(s)
    return None if clip is None else clip.person_s


def _after_f1(s: Score) -> float | None:
    clip = talking_clip(s)
    return None if clip is None else clip.after_token_f1


def _after_cosine(s: Score) -> float | None:
    clip = talking_clip(s)
    return None if clip is None else clip.after_cosine


CLIP_METRICS: dict[str, tuple[Metric, Callable[[Score], float | None] | None]] = {
    "reached": (_rate(_reached), None),
    "yielded": (_rate(clip_yielded), None),
    "stop_s": (_median(clip_stop_s), clip_stop_s),
    "over_clip_s": (_median(_over_clip_s), _over_clip_s),
    "spoke_again": (_rate(_spoke_again), None),
    "person_s": (_median(_person_s), _person_s),
    "after_token_f1": (_median(_after_f1), _after_f1),
    "after_cosine": (_median(_after_cosine), _after_cosine),
}
"""At talk-over points, over the rollouts where the system was talking when the clip came
(``reached``, a share of all): the share that yielded (at a backchannel, a false yield), the
stop latency from the clip's onset, how long it talked over the clip, the share that spoke again
after yielding, the person's own labelled yield latency or time kept talking at those points,
and how close what it said after the clip came to the person's next words (token F1, cosine;
docs/architecture.md "Metrics")."""
CLIP_REPLY_METRICS: dict[str, tuple[Metric, Callable[[Score], float | None] | None]] = {
    **CLIP_METRICS,
    "latency_s": REPLY_METRICS["latency_s"],
    **TALK_OVER_METRICS,
}


def judge_metric(model: str) -> Metric:
    """Recall accuracy under one LLM judge (rollouts it has no verdict on are left out)."""

    def pick(s: Score) -> bool | None:
        if s.recall is None:
            return False
        verdicts = [j.correct for j in s.recall.judges if j.model == model]
        return verdicts[0] if verdicts else None

    return _rate(pick)


def metrics_for(
    kind: PointKind, judges: Sequence[str] = ()
) -> dict[str, tuple[Metric, Callable[[Score], float | None] | None]]:
    """The main table's metrics for a point kind."""
    if kind is PointKind.PAUSE:
        return PAUSE_METRICS
    if kind is PointKind.TURN_END:
        return REPLY_METRICS
    if kind.talks_over:
        return CLIP_REPLY_METRICS
    table = dict(RECALL_METRICS)
    for model in judges:
        table[f"judge:{model}"] = (judge_metric(model), None)
    return table


def bootstrap(
    scores: Sequence[Score],
    metrics: dict[str, tuple[Metric, Callable[[Score], float | None] | None]],
    seed: int,
    resamples: int = RESAMPLES,
) -> dict[str, Value]:
    """Every metric with its quartiles and a 95% interval from resampling conversations.

    Conversations, not rollouts, are drawn with replacement, because points of one conversation
    are not independent (paper appendix E). The same seed gives the same intervals.
    """
    groups: dict[str, list[Score]] = {}
    for s in scores:
        groups.setdefault(s.conversation_id, []).append(s)
    names = sorted(groups)
    counts = draw_counts(np.random.default_rng(seed), len(names), resamples if names else 0)
    ordered = [groups[name] for name in names]
    draws = {name: metric.resampled(ordered, counts) for name, (metric, _) in metrics.items()}
    out = {}
    for name, (metric, pick) in metrics.items():
        estimate = metric(scores)
        q1 = q3 = None
        if pick is not None:
            values = _values(scores, pick)
            if values:
                q1, q3 = (float(v) for v in np.percentile(values, [25, 75]))
            n = len(values)
        else:
            n = len(scores)
        low = high = None
        if draws[name]:
            low, high = (float(v) for v in np.percentile(draws[name], [2.5, 97.5]))
        out[name] = Value(estimate, n, q1, q3, low, high)
    return out


def cell(value: Value | None) -> str:
    """``estimate [ci_low, ci_high]``, or ``-`` where nothing qualifies (or nothing was run)."""
    if value is None or value.estimate is None:
        return "-"
    text = f"{value.estimate:.2f}"
    if value.ci_low is not None and value.ci_high is not None:
        text += f" [{value.ci_low:.2f}, {value.ci_high:.2f}]"
    return text
