"""The client side without a model: word times for the preload, the CLI's install hint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pmc.cli import cli
from pmc.harness._inputs import system_words
from pmc.systems import TimedWord
from pmc.testing.duplex import pause_point


def test_system_words_come_from_the_corpus_on_the_history_clock(tmp_path: Path) -> None:
    point = pause_point(live_s=3.0, history_s=20.0)  # history 10-30 s, system speaker B
    words = [
        {"text": "before", "start_conv_s": 9.0, "end_conv_s": 9.5},
        {"text": "inside", "start_conv_s": 12.0, "end_conv_s": 12.5},
        {"text": "live", "start_conv_s": 30.5, "end_conv_s": 31.0},
    ]
    speakers = [
        {"channel": "A", "words": [{"text": "other", "start_conv_s": 11, "end_conv_s": 12}]},
        {"channel": "B", "words": words},
    ]
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "synthetic.json").write_text(json.dumps({"speakers": speakers}))
    assert system_words(tmp_path / "points", point, []) == (TimedWord("inside", 2.0, 2.5),)


def test_without_a_corpus_the_system_turns_are_spread_over_their_words(tmp_path: Path) -> None:
    point = pause_point(live_s=3.0, history_s=20.0)
    messages = [
        {"role": "user", "text": "hello there", "start_conv_s": 10.0, "end_conv_s": 11.0},
        {"role": "assistant", "text": "ab abcd", "start_conv_s": 12.0, "end_conv_s": 12.6},
    ]
    got = system_words(tmp_path / "points", point, messages)
    assert [w.text for w in got] == ["ab", "abcd"]
    assert got[0].start_s == pytest.approx(2.0) and got[0].end_s == pytest.approx(2.2)
    assert got[1].end_s == pytest.approx(2.6)


def test_serve_duplex_without_its_environment_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PMC_DUPLEX_PYTHON", "/nonexistent/python")
    result = CliRunner().invoke(cli, ["serve-duplex", "--device", "cpu"])
    assert result.exit_code == 1
    assert "make duplex-env" in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
