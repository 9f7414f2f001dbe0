"""The client side without a model: word times for the preload, the CLI's install hint."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from pmc.audio import SAMPLE_RATE, AudioRef
from pmc.cli import cli
from pmc.corpus import Channel, Conversation, SourceKind, Speaker, Word
from pmc.corpus._store import write_conversation
from pmc.harness._inputs import system_words
from pmc.systems import HistoryWord
from pmc.testing.duplex_server import pause_point


def test_system_words_come_from_the_corpus_on_the_history_clock(tmp_path: Path) -> None:
    point = pause_point(live_s=3.0, history_s=20.0)  # history 10-30 s, system speaker B
    words = {
        Channel.A: (Word("other", 11.0, 12.0),),
        Channel.B: (Word("before", 9.0, 9.5), Word("inside", 12.0, 12.5), Word("live", 30.5, 31.0)),
    }
    audio = AudioRef("x.wav", SAMPLE_RATE, 40 * SAMPLE_RATE)
    a, b = (Speaker(c, f"p{c.value}", audio, words[c]) for c in (Channel.A, Channel.B))
    write_conversation(tmp_path, Conversation(point.conversation_id, SourceKind.FOLDER, (a, b)))
    assert system_words(tmp_path / "points", point, []) == (HistoryWord("inside", 2.0, 2.5),)


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
