"""``pmc review import-truth`` and ``pmc review compare`` on the demo: the engine against truth."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from pmc.cli import cli
from pmc.review import TRUTH_REVIEWER, read_log, review_dir


@pytest.fixture
def demo(demo_points_workdir: Path, tmp_path: Path) -> Path:
    """The demo's corpus, labels, windows and ground truth, without audio (none is read)."""
    workdir = tmp_path / "w"
    skip = shutil.ignore_patterns("*.wav", "*.flac", "audio")
    shutil.copytree(demo_points_workdir, workdir, ignore=skip)
    return workdir


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.slow
def test_compare_on_the_demo_with_the_imported_truth(
    demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    runner = CliRunner()
    result = runner.invoke(cli, ["review", "compare", "--workdir", str(demo)])
    assert result.exit_code == 1 and "nothing reviewed yet" in result.output
    result = runner.invoke(cli, ["review", "import-truth", "--workdir", str(demo)])
    assert result.exit_code == 0, result.output
    decided = len(read_log(demo, TRUTH_REVIEWER).entries)
    assert decided >= 40  # every pause and turn-end window of the demo (20 of each at least)
    # A second import adds nothing: truth already decided every window on the same labels.
    result = runner.invoke(cli, ["review", "import-truth", "--workdir", str(demo)])
    assert result.exit_code == 0 and "0 window decisions added" in result.output
    assert len(read_log(demo, TRUTH_REVIEWER).entries) == decided
    result = runner.invoke(cli, ["review", "compare", "--workdir", str(demo)])
    assert result.exit_code == 0, result.output
    assert "The engine's turns against human labels (paper Table 6)" in result.output
    folder = review_dir(demo) / "compare"
    (row,) = _rows(folder / "review_engine_vs_human.csv")
    print(row)
    assert row["reviewer"] == TRUTH_REVIEWER and int(row["conversations"]) == 10
    engine, matched = int(row["engine turns"]), int(row["matched"])
    # The demo's turns are scripted and synthesised: the engine finds nearly all of them.
    assert engine >= 100 and matched / engine >= 0.8
    assert float(row["moved > 1000 ms"]) <= float(row["moved > 250 ms"])
    assert float(row["moved > 250 ms"]) <= float(row["moved > 100 ms"])
    (decisions,) = _rows(folder / "review_decisions.csv")
    assert int(decisions["windows"]) == decided
    assert int(decisions["accepted"]) >= 0.8 * decided  # curated windows mostly hold up
    assert {p.name for p in folder.iterdir()} >= {
        "review_engine_vs_human.md",
        "review_engine_vs_human.csv",
        "review_reviewers.md",
        "review_reviewers.csv",
    }


def test_the_app_serves_until_ctrl_c_then_says_what_to_run_next(
    review_built: Path, tmp_path: Path
) -> None:
    workdir = tmp_path / "w"
    shutil.copytree(review_built, workdir)
    command = [sys.executable, "-m", "pmc", "review", "--workdir", str(workdir), "--port", "0"]
    command += ["--reviewer", "ann"]
    app = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=_wide())
    try:
        assert app.stderr is not None
        first = app.stderr.readline()  # printed once the port is bound
        match = re.search(r"open (http://127\.0\.0\.1:\d+/)", first)
        assert match, first
        with urllib.request.urlopen(match.group(1) + "api/state", timeout=30) as response:
            state = json.load(response)
        assert state["reviewer"] == "ann" and len(state["windows"]) == 4  # 2 drawn per kind
        app.send_signal(signal.SIGINT)
        rest = app.stderr.read()
        assert app.wait(timeout=30) == 0, rest
    finally:
        app.kill()
    assert "pmc points --workdir" in rest and "pmc review compare --workdir" in rest


def _wide() -> dict[str, str]:
    return {**os.environ, "COLUMNS": "250"}
