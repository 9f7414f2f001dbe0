"""Each check of a checks file judged on a run: a bound on its numbers, or a regression.

Bounds read the main table (its rows as ``results.json`` holds them); regressions pair the run
with its baseline point by point, as the context ablation does, and fail only where the paired
bootstrap interval of the difference excludes zero on the worse side and the difference is
beyond the margin (docs/architecture.md "Checks in CI").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from pmc.check._spec import EVERY_SYSTEM, Bound, Derived, Regression, Worse
from pmc.errors import PmcError
from pmc.points import PointKind
from pmc.report import MEASURES, RunData, paired, paired_interval


class CannotCheck(PmcError):
    """The run cannot be checked at all (no scores, other points than the baseline's)."""


class Outcome(StrEnum):
    """A check's verdict."""

    PASSED = "passed"
    FAILED = "failed"
    UNMEASURED = "unmeasured"
    """Nothing to measure it on (no qualifying rollout, a system not in the run): a failure,
    since a check that cannot look must not pass quietly."""

    @property
    def fails(self) -> bool:
        """Whether it fails the run."""
        return self is not Outcome.PASSED


@dataclass(frozen=True)
class CheckResult:
    """One check on one system (and point kind).

    Attributes:
        check: Which entry of the file: ``bound 2``, ``regression 1``.
        name: What it asks, in words: ``latency_s <= 1``.
        system: The system it looked at (``*`` where none matched).
        kind: The point kind, where it has one.
        outcome: Its verdict.
        value: The number it judged (a bound's value; a regression's difference), if any.
        low: The lower end of its 95% bootstrap interval, if any.
        high: The upper end, if any.
        message: The verdict with its numbers, one line.
    """

    check: str
    name: str
    system: str
    kind: PointKind | None
    outcome: Outcome
    value: float | None
    low: float | None
    high: float | None
    message: str

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "check": self.check,
            "name": self.name,
            "system": self.system,
            "kind": None if self.kind is None else self.kind.value,
            "outcome": self.outcome.value,
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "message": self.message,
        }


def _under_test(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    return list(dict.fromkeys(str(r["system"]) for r in rows if r.get("reference") is None))


def _value(row: Mapping[str, Any], metric: str) -> tuple[float | None, float | None, float | None]:
    """A row's value of ``metric`` and its interval (None where the row has no such metric)."""
    if metric in (Derived.FAILED, Derived.NO_AUDIO):
        return float(row[metric]), None, None
    name = "takeover" if metric == Derived.HOLD else metric
    value = row["values"].get(name) or {}
    estimate, low, high = (_number(value.get(k)) for k in ("estimate", "ci_low", "ci_high"))
    if metric == Derived.HOLD:  # 1 - takeover: the interval turns over
        return _turned(estimate), _turned(high), _turned(low)
    return estimate, low, high


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def _turned(value: float | None) -> float | None:
    return None if value is None else 1.0 - value


def _interval(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f" [{low:.3g}, {high:.3g}]"


def check_bounds(rows: Sequence[Mapping[str, Any]], bounds: Sequence[Bound]) -> list[CheckResult]:
    """Each bound on every main-table row it names (a system at a point kind)."""
    results = []
    systems = _under_test(rows)
    for bound in bounds:
        check = f"bound {bound.index}"
        wanted = systems if bound.system == EVERY_SYSTEM else [bound.system]
        matched = [
            r
            for r in rows
            if r["system"] in wanted
            and (bound.kind is None or r["kind"] == bound.kind.value)
            and (bound.metric in (Derived.FAILED, Derived.NO_AUDIO) or _has(r, bound.metric))
        ]
        if not matched:
            where = "" if bound.kind is None else f" at {bound.kind.value}"
            message = f"no row of the run has {bound.metric} for {bound.system}{where}"
            results.append(_unmeasured(check, bound.name, bound.system, bound.kind, message))
            continue
        for row in matched:
            results.append(_judge_bound(check, bound, row))
    return results


def _unmeasured(
    check: str, name: str, system: str, kind: PointKind | None, message: str
) -> CheckResult:
    return CheckResult(check, name, system, kind, Outcome.UNMEASURED, None, None, None, message)


def _has(row: Mapping[str, Any], metric: str) -> bool:
    return ("takeover" if metric == Derived.HOLD else metric) in row["values"]


def _judge_bound(check: str, bound: Bound, row: Mapping[str, Any]) -> CheckResult:
    kind = PointKind(row["kind"])
    system = str(row["system"])
    value, low, high = _value(row, bound.metric)
    if value is None:
        outcome, message = Outcome.UNMEASURED, f"{bound.metric}: no rollout qualified"
    else:
        shown = f"{bound.metric} {value:.3g}{_interval(low, high)}"
        if bound.at_least is not None and value < bound.at_least:
            outcome, message = Outcome.FAILED, f"{shown} is below {bound.at_least:g}"
        elif bound.at_most is not None and value > bound.at_most:
            outcome, message = Outcome.FAILED, f"{shown} is above {bound.at_most:g}"
        else:
            outcome, message = Outcome.PASSED, f"{shown} is within {bound.name}"
    return CheckResult(check, bound.name, system, kind, outcome, value, low, high, message)


def check_regressions(
    current: RunData,
    baseline: RunData,
    regressions: Sequence[Regression],
    seed: int,
    resamples: int,
) -> list[CheckResult]:
    """Each regression for every system it names, paired over the points both runs scored."""
    measures = {m.key: m for m in MEASURES}
    under_test = [s for s in current.systems if current.references[s] is None]
    results = []
    for regression in regressions:
        check = f"regression {regression.index}"
        measure = measures[regression.measure]
        name = f"{regression.measure} not {regression.worse.value} by > {regression.margin:g}"
        if regression.worse is Worse.EITHER:
            name = f"{regression.measure} within {regression.margin:g} of the baseline"
        wanted = under_test if regression.system == EVERY_SYSTEM else [regression.system]
        for system in wanted:
            missing = [r.run_id for r in (current, baseline) if system not in r.scores]
            found = None if missing else paired(baseline, current, system, measure)
            if found is None or not found.base:
                why = f"{system} is not in run {', '.join(missing)}" if missing else ""
                message = why or f"{measure.label}: no point scored in both runs"
                results.append(_unmeasured(check, name, system, measure.kind, message))
                continue
            diffs = [a - b for a, b in zip(found.ablated, found.base, strict=True)]
            low, high = paired_interval(found.by_conversation, seed, resamples)
            change = Change(float(np.mean(diffs)), low, high, len(diffs), baseline.run_id)
            results.append(_judge_regression(check, name, regression, system, measure.kind, change))
    return results


@dataclass(frozen=True)
class Change:
    """A measure's mean paired difference (run minus baseline) and its 95% interval."""

    mean: float
    low: float | None
    high: float | None
    points: int
    baseline: str

    def __str__(self) -> str:
        lo = "-" if self.low is None else f"{self.low:+.3g}"
        hi = "-" if self.high is None else f"{self.high:+.3g}"
        return f"{self.mean:+.3g} [{lo}, {hi}] against {self.baseline}, over {self.points} points"


def _judge_regression(
    check: str, name: str, regression: Regression, system: str, kind: PointKind, change: Change
) -> CheckResult:
    above = change.low is not None and change.low > 0
    below = change.high is not None and change.high < 0
    margin = regression.margin
    worse = {
        Worse.HIGHER: above and change.mean > margin,
        Worse.LOWER: below and change.mean < -margin,
        Worse.EITHER: (above or below) and abs(change.mean) > margin,
    }[regression.worse]
    verdict = f"worse by more than {margin:g}" if worse else "no regression beyond the margin"
    return CheckResult(
        check,
        name,
        system,
        kind,
        Outcome.FAILED if worse else Outcome.PASSED,
        change.mean,
        change.low,
        change.high,
        f"{regression.measure} {change}: {verdict}",
    )
