"""System cards ship with the package: found by name from any folder, listed, shown, shadowed.

The wheel test builds pmc's wheel offline (setuptools and wheel come with the dev extra) from a
copy of the sources, and checks that every bundled card, and the other package data the demo
reads, is inside it: that list in pyproject.toml is what a plain ``pip install`` gets.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from pmc.cli import cli
from pmc.errors import PmcError
from pmc.systems import (
    CardShadowWarning,
    Family,
    bundled_cards,
    card_files,
    card_needs,
    find_card,
    find_cards,
)

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = sorted(p.stem for p in bundled_cards().glob("*.toml"))


def _invoke(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def test_the_paper_s_cards_are_bundled() -> None:
    # The paper's hosted configurations, the reference rows, the local cascades, Moshi.
    for name in ("gpt-realtime-300", "gemini-3.1-flash-live", "person", "endpointer-300", "moshi"):
        assert name in BUNDLED
    assert len(BUNDLED) == 39


def test_a_card_is_found_by_name_from_any_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    card = find_card("gpt-realtime-300")
    assert (card.family, card.api_key_env) == (Family.HOSTED, "OPENAI_API_KEY")
    assert [c.name for c in find_cards(["all"])] == BUNDLED


def test_systems_list_shows_every_card_and_what_it_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    code, output = _invoke("systems", "list")
    assert code == 0, output
    rows = {line.split("│")[1].split()[0]: line for line in output.splitlines() if "│" in line}
    assert sorted(rows) == BUNDLED
    assert "a key in $OPENAI_API_KEY" in rows["gpt-realtime-300"]
    assert "your server at ws://127.0.0.1:8998/api/chat" in rows["moshi"]
    assert "pmc[duplex-client]" in rows["moshi"]
    assert "pmc[pipecat]" in rows["smart-turn"]
    assert "your server at ws://127.0.0.1:8766/" in rows["pcm-agent"]
    assert "your server at ws://127.0.0.1:8765/" in rows["voicebench-agent"]
    assert "nothing: runs here" in rows["endpointer-300"]
    assert "(reference)" in rows["never-speak"]
    assert "(reference)" not in rows["endpointer-300"]
    assert "pmc systems show" in output


def test_needs_are_read_from_the_card_and_its_adapter() -> None:
    needs = card_needs(find_card("personaplex"))
    assert (needs.key_env, needs.server, needs.extra) == (
        None,
        "ws://127.0.0.1:8999/api/duplex",
        "duplex-client",
    )
    hosted = card_needs(find_card("grok-voice"))
    assert (hosted.key_env, hosted.server, hosted.extra) == ("XAI_API_KEY", None, None)
    assert card_needs(find_card("shuffled-person")).reference == "shuffled person, similarity floor"


def test_systems_show_prints_the_card_with_its_comments() -> None:
    code, output = _invoke("systems", "show", "gpt-realtime-300")
    assert code == 0, output
    text = (bundled_cards() / "gpt-realtime-300.toml").read_text()
    assert text in output
    assert "# needs: a key in $OPENAI_API_KEY" in output
    assert "pmc run --workdir WORKDIR --system gpt-realtime-300" in output


def test_an_unknown_card_names_the_known_ones() -> None:
    code, output = _invoke("systems", "show", "gpt-9")
    assert code == 1
    assert "gpt-9: no such system card" in output
    assert "gpt-realtime-300" in output
    with pytest.raises(PmcError, match="no such system card bundled"):
        find_card("gpt-9")


def test_a_user_card_adds_to_the_bundled_ones_and_shadows_only_with_a_warning(
    tmp_path: Path,
) -> None:
    mine = tmp_path / "cards"
    mine.mkdir()
    bundled = (bundled_cards() / "endpointer-300.toml").read_text()
    (mine / "endpointer-300.toml").write_text(bundled.replace("300 ms silence", "my copy"))
    (mine / "my-agent.toml").write_text(
        (bundled_cards() / "twilio-agent.toml").read_text().replace("8765", "9000")
    )

    files = card_files(mine)
    assert files["endpointer-300"].shadows == bundled_cards() / "endpointer-300.toml"
    assert files["my-agent"].shadows is None and not files["my-agent"].bundled
    assert files["person"].bundled

    told: list[str] = []
    card = find_card("endpointer-300", mine, told.append)
    assert "my copy" in card.description
    assert told == [files["endpointer-300"].shadow_message]
    assert str(mine / "endpointer-300.toml") in told[0]
    assert find_card("my-agent", mine, told.append).endpoint == "ws://127.0.0.1:9000/media-stream"
    assert len(told) == 1  # a new name shadows nothing
    with pytest.warns(CardShadowWarning, match="replaces the bundled card 'endpointer-300'"):
        find_card("endpointer-300", mine)

    code, output = _invoke("systems", "list", "--systems-dir", mine)
    assert code == 0, output
    assert "warning:" in output and "replaces the bundled card 'endpointer-300'" in output
    assert "my-agent" in output


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Pmc's wheel, built offline from a copy of the sources (no build folder in the repo)."""
    src = tmp_path_factory.mktemp("pmc-src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(
        ROOT / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    out = tmp_path_factory.mktemp("wheel")
    command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps"]
    command += ["--no-build-isolation", "--no-index", "-w", str(out), str(src)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    (found,) = out.glob("pmc-*.whl")
    return found


def test_the_wheel_carries_every_card_and_the_demo_s_data(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    cards = {n for n in names if n.startswith("pmc/systems/cards/")}
    assert cards == {f"pmc/systems/cards/{name}.toml" for name in BUNDLED}
    for data in ("pmc/report/data/report.css", "pmc/points/fact_bank.json", "pmc/py.typed"):
        assert data in names
    scripts = {p.name for p in (ROOT / "src/pmc/demo/scripts").glob("*.txt")}
    assert {f"pmc/demo/scripts/{s}" for s in scripts} <= names
