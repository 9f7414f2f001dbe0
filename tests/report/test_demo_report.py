"""The report of the reference systems on the demo points.

Every table and figure, reference rows that match their definitions, intervals that repeat
with the seed (the report issue's "done when"), a summary that places the references against
the person, written without a warning, and rollout pages whose timelines show the labelled
pauses silent.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pmc.harness import Run
from pmc.points import PointKind, read_points
from pmc.report import _stage, build_report
from tests.report.browser import PERSON_SPEECH

pytestmark = pytest.mark.slow

RESAMPLES = 300
"""Fewer than the report's 2,000: enough to show the intervals repeat, in a third of the time."""

TABLES = {
    "takeover_by_pause_duration",
    "turn_end_distributions",
    "recall_by_history",
    "boundary_sensitivity",
    "paired_comparison",
    "recall_scorer_agreement",
    "exceptional_outcomes",
    "takeover_by_curation_tercile",
    "latency_parts",
}
FIGURES = {
    "pauses",
    "turn_end",
    "recall",
    "takeover_by_pause_duration",
    "turn_end_cdf",
    "talk_over",
}


LABEL_EDGE_S = 0.1
"""How far inside a labelled pause the gate may find the person's speech, at the pause's edges:
labelled boundaries come from recognised word times, which land tens of ms off the audio (the
person resumes up to 80 ms before a demo pause's labelled end)."""


@pytest.fixture(scope="module")
def built(reference_run: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The report's folder, and every warning raised while it was written."""
    folder = tmp_path_factory.mktemp("report")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build_report(reference_run, seed=5, resamples=RESAMPLES, folder=folder)
    return folder, [f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})" for w in caught]


@pytest.fixture(scope="module")
def report(built: tuple[Path, list[str]]) -> Path:
    return built[0]


@pytest.fixture(scope="module")
def results(report: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((report / "results.json").read_text())
    return data


def value(results: dict[str, Any], system: str, kind: str, metric: str) -> Any:
    rows = [r for r in results["main_table"] if r["system"] == system and r["kind"] == kind]
    assert len(rows) == 1, (system, kind)
    return rows[0]["values"][metric]["estimate"]


def test_every_table_and_figure_is_written(report: Path, results: dict[str, Any]) -> None:
    assert {t["key"] for t in results["tables"]} == TABLES
    assert {f["key"] for f in results["figures"]} == FIGURES
    for figure in results["figures"]:
        assert (report / figure["file"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for key in TABLES:
        assert (report / "tables" / f"{key}.csv").exists()
    kinds = {r["kind"] for r in results["main_table"]}
    assert kinds == {k.value for k in PointKind}
    text = (report / "report.md").read_text()
    assert "paper Table 3" in text and "paper Table 14" in text and "paper Table 15" in text
    assert (report / "index.html").exists()


def test_reference_rows_match_their_definitions(results: dict[str, Any]) -> None:
    roles = {r["system"]: r["reference"] for r in results["main_table"]}
    assert roles == {
        "never-speak": "never speak",
        "always-speak": "always speak",
        "person": "the person, similarity ceiling",
        "shuffled-person": "shuffled person, similarity floor",
    }
    # Never speak: holds every pause, never answers, recalls nothing.
    assert value(results, "never-speak", "pause", "silent") == 1.0
    assert value(results, "never-speak", "turn_end", "latency_s") is None
    assert value(results, "never-speak", "fact_recall", "strict") == 0.0
    # Always speak: takes every pause, is talking at every turn end until the cap.
    assert value(results, "always-speak", "pause", "takeover") == 1.0
    assert value(results, "always-speak", "turn_end", "censored") == 1.0
    assert value(results, "always-speak", "turn_end", "latency_s") <= 0.0
    # The person: holds every pause; its reply is itself (the transcription ceiling).
    assert value(results, "person", "pause", "silent") == 1.0
    assert value(results, "person", "turn_end", "token_f1") >= 0.8
    assert 0.9 <= value(results, "person", "turn_end", "duration_ratio") <= 1.1
    assert value(results, "person", "fact_recall", "strict") >= 0.9
    # The shuffled person: another point's reply, the similarity floor.
    assert value(results, "shuffled-person", "turn_end", "token_f1") <= 0.25
    floor = value(results, "shuffled-person", "turn_end", "cosine")
    assert floor <= value(results, "person", "turn_end", "cosine") - 0.4


def test_intervals_repeat_with_the_seed_and_move_without_it(
    reference_run: Path, report: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only results.json is compared: the HTML site, most of a report's writing time, is skipped.
    monkeypatch.setattr(_stage, "write_html", lambda folder, *_: folder / "index.html")
    build_report(reference_run, seed=5, resamples=RESAMPLES, folder=tmp_path / "same")
    build_report(reference_run, seed=6, resamples=RESAMPLES, folder=tmp_path / "other")
    first = json.loads((report / "results.json").read_text())
    same = json.loads((tmp_path / "same" / "results.json").read_text())
    other = json.loads((tmp_path / "other" / "results.json").read_text())
    assert same == first

    def intervals(results: dict[str, Any]) -> list[Any]:
        return [
            (r["system"], r["kind"], m, v["ci_low"], v["ci_high"])
            for r in results["main_table"]
            for m, v in sorted(r["values"].items())
        ]

    assert intervals(other) != intervals(first)
    assert any(v["ci_low"] is not None for r in first["main_table"] for v in r["values"].values())


def test_writing_the_report_warns_nothing(built: tuple[Path, list[str]]) -> None:
    assert built[1] == []


def test_the_summary_places_the_references_against_the_person(
    reference_run: Path, results: dict[str, Any]
) -> None:
    summary = results["summary"]
    keys = [q["key"] for q in summary["questions"]]
    assert keys == ["hold", "latency", "length", "similarity", "recall"]
    rows = {r["system"]: r for r in summary["rows"]}
    assert all(r["reference"] is not None for r in rows.values())  # all four are references

    def shown(system: str, key: str) -> Any:
        return rows[system]["values"][key]["estimate"]

    # Read from the main table, not computed again: the hold rate is 1 - the takeover share.
    for q in summary["questions"]:
        for system in rows:
            metric = "takeover" if q["key"] == "hold" else q["metric"]
            source = value(results, system, q["kind"], metric)
            if q["key"] == "hold":
                assert shown(system, "hold") == pytest.approx(1 - source, abs=1e-4)
            else:
                assert shown(system, q["key"]) == source
    assert shown("never-speak", "hold") == 1.0 and shown("always-speak", "hold") == 0.0
    assert shown("person", "hold") == 1.0
    # The person's latency: the labelled offset of its replies, over the turn ends the run scored.
    turn_ends = [p for p in read_points(Run(reference_run).workdir) if p.kind is PointKind.TURN_END]
    offsets = [
        p.reply_start_conv_s - p.boundary_conv_s
        for p in turn_ends
        if p.reply_start_conv_s is not None
    ]
    assert summary["person"]["latency"] == pytest.approx(float(np.median(offsets)), abs=1e-4)
    assert summary["figure"]["file"] == "figures/summary.png"


def test_the_timeline_shows_each_labelled_pause_silent(
    report: Path, reference_run: Path, browser: Any
) -> None:
    """Every demo pause point, as the person's speech is drawn on never-speak's pages."""
    points = {p.point_id: p for p in read_points(Run(reference_run).workdir)}
    pages = sorted((report / "rollouts" / "never-speak").glob("pause-*-0.html"))
    assert len(pages) == sum(p.kind is PointKind.PAUSE for p in points.values()) > 0
    page = browser.new_page()
    silent = 0
    for html in pages:
        page.goto(html.as_uri())
        speech = page.evaluate(PERSON_SPEECH)
        point = points[html.stem.rsplit("-", 1)[0]]
        start, end = point.boundary_stream_s, point.boundary_end_stream_s
        inside = [(a, b) for a, b in speech if a < end - LABEL_EDGE_S and b > start + LABEL_EDGE_S]
        assert inside == [], f"{html.name}: the person speaks in the pause {start}-{end}"
        assert any(0 < b <= start + LABEL_EDGE_S for _, b in speech), f"{html.name}: no lead-in"
        silent += not any(a < end and b > start for a, b in speech)
    page.close()
    assert silent >= len(pages) / 2  # most pauses are silent to the sample
