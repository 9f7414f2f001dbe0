"""``pmc run`` from the command line: a table of outcomes, resumable, clear errors."""

from pathlib import Path

from click.testing import CliRunner

from pmc.cli import cli
from pmc.systems import bundled_cards
from pmc.testing.points import write_points

SYSTEMS = bundled_cards()


def test_run_twice_resumes_and_says_so(tmp_path: Path) -> None:
    write_points(tmp_path)
    args = ["run", "--workdir", str(tmp_path), "--systems-dir", str(SYSTEMS)]
    args += ["--system", "never-speak", "--system", "person", "--run-id", "cli"]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 0, first.output
    assert "never-speak" in first.output and "person" in first.output
    assert len(list((tmp_path / "runs" / "cli").rglob("trace.json"))) == 8
    second = CliRunner().invoke(cli, args)
    assert second.exit_code == 0, second.output
    row = next(line for line in second.output.splitlines() if "person" in line)
    assert [cell.strip() for cell in row.split("│")[1:5]] == ["person", "0", "4", "0"]


def test_an_unknown_card_is_one_line_naming_the_known_ones(tmp_path: Path) -> None:
    write_points(tmp_path)
    args = ["run", "--workdir", str(tmp_path), "--systems-dir", str(SYSTEMS), "--system", "nope"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code != 0
    assert "no such system card" in result.output and "never-speak" in result.output
    assert "Traceback" not in result.output


def test_run_without_points_says_what_to_do(tmp_path: Path) -> None:
    args = ["run", "--workdir", str(tmp_path), "--systems-dir", str(SYSTEMS)]
    result = CliRunner().invoke(cli, [*args, "--system", "never-speak"])
    assert result.exit_code != 0
    assert "run `pmc points` first" in result.output
