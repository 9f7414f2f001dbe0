"""pmc check's verdicts, on rows and runs built here whose every number is known."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pmc.check import (
    Bound,
    CannotCheck,
    Outcome,
    Regression,
    check_bounds,
    check_regressions,
    junit_xml,
    read_checks,
    read_subject,
)
from pmc.errors import InputError
from pmc.harness import HistorySource
from pmc.points import PointKind
from tests.report.test_ablation import _run


def _row(system: str, kind: str, values: dict[str, Any], **counts: int) -> dict[str, Any]:
    return {
        "system": system,
        "kind": kind,
        "points": 4,
        "failed": counts.get("failed", 0),
        "no_audio": counts.get("no_audio", 0),
        "untranscribed": 0,
        "values": values,
        "reference": counts.get("reference"),
    }


ROWS = [
    _row(
        "fast",
        "pause",
        {"takeover": {"estimate": 0.75, "n": 4, "ci_low": 0.5, "ci_high": 1.0}},
    ),
    _row(
        "fast", "turn_end", {"latency_s": {"estimate": 0.8, "n": 4, "ci_low": 0.7, "ci_high": 0.9}}
    ),
    _row(
        "slow",
        "turn_end",
        {"latency_s": {"estimate": 1.4, "n": 4, "ci_low": 1.2, "ci_high": 1.6}},
        failed=2,
    ),
    _row("quiet", "turn_end", {"latency_s": {"estimate": None, "n": 0}}),
    _row("person", "turn_end", {"latency_s": {"estimate": 9.0, "n": 4}}, reference=1),
]


def test_bounds_pass_fail_and_say_when_there_was_nothing_to_measure() -> None:
    bounds = [
        Bound(1, "*", PointKind.TURN_END, "latency_s", at_most=1.0),
        Bound(2, "fast", PointKind.PAUSE, "hold", at_least=0.5),
        Bound(3, "*", None, "failed", at_most=0),
        Bound(4, "gone", None, "latency_s", at_most=1.0),
    ]
    results = check_bounds(ROWS, bounds)
    verdicts = [(r.check, r.system, r.kind and r.kind.value, r.outcome) for r in results]
    # The reference row (person) is not a system under test: "*" leaves it out.
    assert verdicts == [
        ("bound 1", "fast", "turn_end", Outcome.PASSED),
        ("bound 1", "slow", "turn_end", Outcome.FAILED),
        ("bound 1", "quiet", "turn_end", Outcome.UNMEASURED),
        ("bound 2", "fast", "pause", Outcome.FAILED),
        ("bound 3", "fast", "pause", Outcome.PASSED),
        ("bound 3", "fast", "turn_end", Outcome.PASSED),
        ("bound 3", "slow", "turn_end", Outcome.FAILED),
        ("bound 3", "quiet", "turn_end", Outcome.PASSED),
        ("bound 4", "gone", None, Outcome.UNMEASURED),
    ]
    slow = results[1]
    assert slow.message == "latency_s 1.4 [1.2, 1.6] is above 1"
    # Hold is 1 - takeover, its interval turned over with it.
    hold = results[3]
    assert (hold.value, hold.low, hold.high) == (0.25, 0.0, 0.5)
    assert hold.message == "hold 0.25 [0, 0.5] is below 0.5"


def test_a_regression_fails_only_beyond_its_margin_with_an_interval_clear_of_zero() -> None:
    # cascade answers 0.2 s later in every conversation of the second run, and holds more;
    # steady does the same in both.
    base = _run(HistorySource.FULL, forgets=False)
    worse = _run(HistorySource.FULL, forgets=True)
    regressions = [
        Regression(1, "*", "latency_s", 0.1),
        Regression(2, "*", "latency_s", 0.3),
        Regression(3, "*", "hold", 0.0),
    ]
    results = check_regressions(worse, base, regressions, seed=0, resamples=200)
    verdicts = [(r.check, r.system, r.outcome) for r in results]
    assert verdicts == [
        ("regression 1", "cascade", Outcome.FAILED),
        ("regression 1", "steady", Outcome.PASSED),
        ("regression 2", "cascade", Outcome.PASSED),
        ("regression 2", "steady", Outcome.PASSED),
        ("regression 3", "cascade", Outcome.PASSED),  # it holds more: better, not worse
        ("regression 3", "steady", Outcome.PASSED),
    ]
    late = results[0]
    assert late.value == pytest.approx(0.2)
    assert late.low == pytest.approx(0.2) and late.high == pytest.approx(0.2)
    assert late.message == (
        "latency_s +0.2 [+0.2, +0.2] against run-full, over 4 points: worse by more than 0.1"
    )
    # Lower is worse for recall: the cascade forgets in every conversation.
    forgot = check_regressions(worse, base, [Regression(1, "cascade", "fact_recall", 0.5)], 0, 200)
    assert [(r.outcome, r.value, r.low, r.high) for r in forgot] == [
        (Outcome.FAILED, -1.0, -1.0, -1.0)
    ]


def test_the_junit_file_has_a_case_per_check_and_a_failure_per_failed_one() -> None:
    results = check_bounds(ROWS, [Bound(1, "*", PointKind.TURN_END, "latency_s", at_most=1.0)])
    root = ET.fromstring(junit_xml(results, "pmc check demo"))
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    assert (suite.get("name"), suite.get("tests"), suite.get("failures")) == (
        "pmc check demo",
        "3",
        "2",
    )
    assert [c.get("classname") for c in cases] == [
        "pmc.check.fast.turn_end",
        "pmc.check.slow.turn_end",
        "pmc.check.quiet.turn_end",
    ]
    assert [c.find("failure") is not None for c in cases] == [False, True, True]
    failure = cases[1].find("failure")
    assert failure is not None and failure.get("message") == "latency_s 1.4 [1.2, 1.6] is above 1"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "nothing to check"),
        ('[[bound]]\nmetric = "speed"\nat_most = 1\n', "bound 1: metric 'speed' is not one of"),
        ('[[bound]]\nmetric = "latency_s"\n', "bound 1: a bound needs at_least, at_most or both"),
        (
            '[[bound]]\nmetric = "hold"\nkind = "turn_end"\nat_least = 0.5\n',
            "bound 1: hold is a rate at pauses",
        ),
        ('[[regression]]\nmeasure = "latency_s"\n', "regression 1: margin is required"),
        ('[[regression]]\nmeasure = "speed"\nmargin = 1\n', "regression 1: measure 'speed'"),
        ('colour = "red"\n[[bound]]\nmetric = "failed"\nat_most = 0\n', "unknown key(s): colour"),
        ("[[bound]\n", "invalid TOML"),
    ],
)
def test_a_bad_checks_file_is_named_with_the_entry_at_fault(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "checks.toml"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        read_checks(path)
    assert str(caught.value).startswith(str(path))
    assert message in str(caught.value)


def test_a_checks_file_reads_its_entries_and_its_baseline_beside_it(tmp_path: Path) -> None:
    path = tmp_path / "ci" / "checks.toml"
    path.parent.mkdir()
    path.write_text(
        'baseline = "../runs/base"\n'
        '[[bound]]\nkind = "pause"\nmetric = "hold"\nat_least = 0.5\n'
        '[[regression]]\nsystem = "endpointer-300"\nmeasure = "latency_s"\nmargin = 0.1\n'
    )
    checks = read_checks(path)
    assert checks.baseline == path.parent / "../runs/base"
    assert checks.bounds == (Bound(1, "*", PointKind.PAUSE, "hold", 0.5, None),)
    assert checks.regressions == (Regression(1, "endpointer-300", "latency_s", 0.1),)
    assert checks.bounds[0].name == "hold >= 0.5"


def test_a_malformed_results_file_cannot_be_checked(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text('{"main_table": [{"system": "a", "kind": "pause"}]}')
    with pytest.raises(CannotCheck, match=r"not a report's results\.json"):
        read_subject(path, 0, 10)
    path.write_text(json.dumps({"main_table": ROWS}))
    assert read_subject(path, 0, 10).rows == ROWS
