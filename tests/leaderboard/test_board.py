"""The leaderboard's rows and groups, from results.json files written here."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from pmc.leaderboard import CSV_FILE, JSON_FILE, PAGE, build_leaderboard, grouped, read_entries

TINY = {"asr": "faster-whisper:tiny.en", "metrics": 5}
BASE = {"asr": "faster-whisper:base", "metrics": 5}


def _value(estimate: float | None, low: float | None = None, high: float | None = None) -> Any:
    return {"estimate": estimate, "n": 4, "ci_low": low, "ci_high": high}


def _run(root: Path, run_id: str, points: str, settings: dict[str, Any], latency: float) -> Path:
    """A run folder with only its report's results.json: one system and a reference."""
    rows = [
        {"system": "agent", "kind": "pause", "failed": 1, "reference": None,
         "values": {"takeover": _value(0.25, 0.1, 0.4)}},
        {"system": "agent", "kind": "turn_end", "failed": 0, "reference": None,
         "values": {"latency_s": _value(latency, latency - 0.1, latency + 0.1)}},
        {"system": "person", "kind": "turn_end", "failed": 0, "reference": "person",
         "values": {"latency_s": _value(0.3)}},
    ]  # fmt: skip
    provenance = {
        "points_manifest_sha256": points,
        "systems": {name: {"score_settings": settings} for name in ("agent", "person")},
    }
    results = {"run_id": run_id, "main_table": rows, "provenance": provenance}
    folder = root / run_id
    (folder / "report").mkdir(parents=True)
    (folder / "report" / "results.json").write_text(json.dumps(results))
    return folder


def test_a_row_per_system_its_hold_rate_turned_from_takeovers(tmp_path: Path) -> None:
    agent, person = read_entries(_run(tmp_path, "a", "p" * 64, TINY, 0.9))
    assert (agent.system, agent.reference, person.reference) == ("agent", None, "person")
    hold = agent.cells["hold"]
    assert (hold.estimate, hold.low, hold.high) == pytest.approx((0.75, 0.6, 0.9))
    assert agent.cells["latency_s"].text == "0.90 [0.80, 1.00]"
    assert agent.failed == 1 and "recall" not in agent.cells
    assert agent.report == tmp_path / "a" / "report" / "index.html"


def test_runs_measured_otherwise_are_grouped_apart_saying_what_differs(tmp_path: Path) -> None:
    runs = [
        _run(tmp_path, "a", "p" * 64, TINY, 0.9),
        _run(tmp_path, "b", "p" * 64, TINY, 1.1),
        _run(tmp_path, "c", "q" * 64, TINY, 1.0),
        _run(tmp_path, "d", "p" * 64, BASE, 1.0),
    ]
    groups = grouped([e for r in runs for e in read_entries(r)])
    assert [[(e.run_id, e.system) for e in g.entries] for g in groups] == [
        [("a", "agent"), ("a", "person"), ("b", "agent"), ("b", "person")],
        [("c", "agent"), ("c", "person")],
        [("d", "agent"), ("d", "person")],
    ]
    assert groups[0].differs == ()
    assert groups[1].differs == ("points: manifest qqqqqqqqqqqq (first group: pppppppppppp)",)
    assert groups[2].differs == (
        "score setting asr: faster-whisper:base (first group: faster-whisper:tiny.en)",
    )


def test_the_files_hold_every_row_and_a_run_without_a_report_is_left_out(tmp_path: Path) -> None:
    runs = [_run(tmp_path, "a", "p" * 64, TINY, 0.9), tmp_path / "unreported"]
    runs[1].mkdir()
    board = build_leaderboard(runs, tmp_path / "board")
    (problem,) = board.skipped
    assert str(problem).startswith(str(tmp_path / "unreported" / "report" / "results.json"))
    assert "run `pmc report --run" in str(problem)
    rows = list(csv.DictReader((tmp_path / "board" / CSV_FILE).open()))
    assert [(r["group"], r["run_id"], r["system"], r["hold"]) for r in rows] == [
        ("1", "a", "agent", "0.7500"),
        ("1", "a", "person", ""),
    ]
    data = json.loads((tmp_path / "board" / JSON_FILE).read_text())
    assert [len(g["rows"]) for g in data["groups"]] == [2] and len(data["skipped"]) == 1
    page = (tmp_path / "board" / PAGE).read_text()
    assert 'href="../a/report/index.html"' in page and "<script>" in page


def test_a_malformed_results_file_is_named_not_a_traceback(tmp_path: Path) -> None:
    run = _run(tmp_path, "a", "p" * 64, TINY, 0.9)
    (run / "report" / "results.json").write_text('{"run_id": "a", "main_table": [{"kind": 1}]}')
    board = build_leaderboard([run, _run(tmp_path, "b", "p" * 64, TINY, 1.0)], tmp_path / "o")
    (problem,) = board.skipped
    assert str(problem).startswith(str(run / "report" / "results.json") + ": not a report's")
    assert [e.run_id for g in board.groups for e in g.entries] == ["b", "b"]
