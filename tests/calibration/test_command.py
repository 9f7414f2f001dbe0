"""``pmc calibrate-gate`` on a real run: the files, a rerun from the cache, one-line errors."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from pmc import io
from pmc.calibration import CALIBRATION_SCHEMA_VERSION, SweepGrid
from pmc.cli._calibrate import calibrate_gate_command


def test_calibrate_gate_writes_the_table_and_a_rerun_only_sweeps(run_dir: Path) -> None:
    args = [str(run_dir), "--workers", "1"]
    first = CliRunner().invoke(calibrate_gate_command, args)
    assert first.exit_code == 0, first.output
    assert "DESIGN" in first.output
    assert f"pmc report --run {args[0]}" in first.output  # what to run next
    folder = run_dir / "calibration"
    data = io.read_json(folder / "gate.json")
    assert data["schema_version"] == CALIBRATION_SCHEMA_VERSION
    assert (data["tracks"], data["systems"]) == (4, ["person"])
    # The person's two replies and the spoken recall answer; the pause point is silent.
    assert data["utterances"] == 3
    assert len(data["rows"]) == len(SweepGrid().params())
    design = next(r for r in data["rows"] if r["design"])
    assert (design["missed"], design["false_onsets"]) == (0, 0)
    assert (folder / "gate.md").read_text().count("\n| ") == 2 + len(data["rows"])  # heading, rule
    assert (folder / "gate.csv").read_text().count("\n") == 1 + len(data["rows"])
    assert len(list((folder / "labels" / "person").rglob("*.json"))) == 4

    before = (folder / "gate.json").read_bytes()
    second = CliRunner().invoke(calibrate_gate_command, args)
    assert second.exit_code == 0, second.output
    # No track decoded (so no model loaded): every one came from the cache.
    assert "tracks transcribed now 0, from the cache 4" in second.output
    assert (folder / "gate.json").read_bytes() == before
    assert data["onset"] == "envelope"  # as scores place onsets, and gate.md says so
    assert "(onset rule envelope, as scores place it)" in (folder / "gate.md").read_text()
    grid = CliRunner().invoke(calibrate_gate_command, [*args, "--onset", "window"])
    assert grid.exit_code == 0, grid.output
    assert io.read_json(folder / "gate.json")["onset"] == "window"
    assert "(onset rule window, as the paper did)" in (folder / "gate.md").read_text()


def test_calibrate_gate_errors_are_one_line(run_dir: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(calibrate_gate_command, [str(tmp_path)])
    assert result.exit_code == 1
    assert result.output.strip().count("\n") == 0 and "not a run" in result.output
    result = CliRunner().invoke(calibrate_gate_command, [str(run_dir), "--system", "nobody"])
    assert result.exit_code == 1
    assert "no rollouts of nobody (systems here: person)" in result.output
