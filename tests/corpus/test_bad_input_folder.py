"""Bad input in the folder format: one line naming the file, that conversation skipped."""

import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from pmc import audio
from pmc.cli import cli
from pmc.corpus import FolderSource, import_corpus, read_corpus
from pmc.errors import Problem


def _tone(seconds: float) -> np.ndarray:
    t = np.arange(round(seconds * 16_000)) / 16_000
    return (0.2 * np.sin(2 * np.pi * 300 * t)).astype(np.float32)


def _words_file(words: list[dict[str, object]]) -> str:
    return json.dumps({"words": words})


def _conversation(folder: Path) -> Path:
    """Two mono WAVs of 2 s and a word for each speaker."""
    folder.mkdir(parents=True)
    for side, start in (("A", 0.2), ("B", 0.9)):
        (folder / f"{side}.wav").write_bytes(audio.wav_bytes(_tone(2.0), 16_000))
        word = {"word": "hi", "start": start, "end": start + 0.3}
        (folder / f"{side}.json").write_text(_words_file([word]))
    return folder


def _no_words(folder: Path) -> None:
    for side in "AB":
        (folder / f"{side}.json").unlink()


def _stereo(folder: Path) -> None:
    for side in "AB":
        (folder / f"{side}.wav").unlink()
    (folder / "conversation.wav").write_bytes(audio.wav_bytes(_tone(2.0), 16_000))  # mono


Spoil = Callable[[Path], object]
CASES: dict[str, tuple[Spoil, Problem, str, str]] = {
    "no words file at all": (
        _no_words,
        Problem.MISSING_FILE,
        "A.json",
        "cannot read (No such file or directory)",
    ),
    "no words file for B": (
        lambda f: (f / "B.json").unlink(),
        Problem.MISSING_FILE,
        "B.json",
        "cannot read (No such file or directory)",
    ),
    "no WAV for B": (
        lambda f: (f / "B.wav").unlink(),
        Problem.MISSING_FILE,
        "B.wav",
        "cannot read WAV (No such file or directory)",
    ),
    "zero-byte WAV": (
        lambda f: (f / "B.wav").write_bytes(b""),
        Problem.CORRUPT_AUDIO,
        "B.wav",
        "corrupt WAV (",
    ),
    "WAV without samples": (
        lambda f: (f / "B.wav").write_bytes(audio.wav_bytes(_tone(0.0), 16_000)),
        Problem.EMPTY_AUDIO,
        "B.wav",
        "empty WAV (no samples)",
    ),
    "corrupt WAV": (
        lambda f: (f / "B.wav").write_bytes(b"RIFF\x24\x00\x00\x00WAVEfmt garbage"),
        Problem.CORRUPT_AUDIO,
        "B.wav",
        "corrupt WAV (",
    ),
    "WAV shorter than its words": (
        lambda f: (f / "B.wav").write_bytes(audio.wav_bytes(_tone(0.5), 16_000)),
        Problem.AUDIO_SHORTER_THAN_TRANSCRIPT,
        "B.wav",
        "WAV shorter than its transcript (audio 0.50 s, words or activity run to 1.20 s)",
    ),
    "WAV cut off mid-file": (
        lambda f: (f / "B.wav").write_bytes((f / "B.wav").read_bytes()[:8_000]),
        Problem.AUDIO_SHORTER_THAN_TRANSCRIPT,
        "B.wav",
        "WAV shorter than its transcript (audio 0.25 s, words or activity run to 1.20 s)",
    ),
    "mono conversation.wav": (
        _stereo,
        Problem.BAD_RECORD,
        "conversation.wav",
        "has 1 channel(s), channel 1 requested",
    ),
    "words not UTF-8": (
        lambda f: (f / "B.json").write_bytes('{"words": [], "n": "caf\u00e9"}'.encode("latin-1")),
        Problem.NOT_UTF8,
        "B.json",
        "not UTF-8 (byte 23)",
    ),
    "words not JSON": (
        lambda f: (f / "B.json").write_text('{"words": [\n  oops]}'),
        Problem.BAD_JSON,
        "B.json",
        "line 2: invalid JSON (",
    ),
    "words nested too deeply": (
        lambda f: (f / "B.json").write_text('{"words": ' + "[" * 100_000 + "]" * 100_000 + "}"),
        Problem.BAD_JSON,
        "B.json",
        "invalid JSON (nested too deeply to read)",
    ),
    "words file not an object": (
        lambda f: (f / "B.json").write_text("[]"),
        Problem.BAD_RECORD,
        "B.json",
        "expected an object with a 'words' list",
    ),
    "word end <= start": (
        lambda f: (f / "B.json").write_text('{"words": [{"word": "a", "start": 1, "end": 0.5}]}'),
        Problem.BAD_WORD_TIMES,
        "B.json",
        "words[0]: word 'a' has end 0.500 s <= start 1.000 s",
    ),
    "word time not a finite number": (
        lambda f: (f / "B.json").write_text('{"words": [{"word": "a", "start": 0, "end": 1e999}]}'),
        Problem.BAD_RECORD,
        "B.json",
        "words[0]: 'end' is not a finite number (inf)",
    ),
    "activity without an end": (
        lambda f: (f / "B.json").write_text('{"words": [], "activity": [{"start": 1}]}'),
        Problem.BAD_RECORD,
        "B.json",
        "activity[0]: voice-activity record without start or end",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_file_skips_only_its_conversation(tmp_path: Path, case: str) -> None:
    spoil, problem, name, text = CASES[case]
    root = tmp_path / "c"
    _conversation(root / "good")
    spoil(_conversation(root / "bad"))
    summary = import_corpus(FolderSource(root), tmp_path / "w", min_duration_s=0)
    assert summary.imported == ["good"]
    (skipped,) = summary.skipped
    assert (skipped.item, skipped.problem) == ("bad", problem)
    assert skipped.message.startswith(f"{root / 'bad' / name}: {text}")
    assert "\n" not in skipped.message
    stored = json.loads((tmp_path / "w" / "corpus" / "_import.json").read_text())
    assert stored["skipped_by_problem"] == {problem.value: 1}


@pytest.mark.parametrize("name", ["call 001", ".hidden", "-x", "caf\u00e9"])
def test_unusable_folder_name(tmp_path: Path, name: str) -> None:
    root = tmp_path / "c"
    _conversation(root / "good")
    _conversation(root / name)
    summary = import_corpus(FolderSource(root), tmp_path / "w", min_duration_s=0)
    assert summary.imported == ["good"]
    (skipped,) = summary.skipped
    assert (skipped.item, skipped.problem) == (name, Problem.BAD_RECORD)
    assert skipped.message == f"{root / name}: folder name is not usable as a conversation id"


def _import_cli(root: Path, workdir: Path, *flags: str) -> str:
    args = ["corpus", "import", "folder", str(root), "--workdir", str(workdir), *flags]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return result.output


def test_folder_name_that_is_not_utf8_is_skipped_not_a_crash(tmp_path: Path) -> None:
    root = tmp_path / "c"
    _conversation(root / "good")
    _conversation(Path(os.fsdecode(os.fsencode(root) + b"/call\xff")))
    output = _import_cli(root, tmp_path / "w")
    (line,) = [x for x in output.splitlines() if x.startswith("skipped ")]
    assert line == f"skipped {root}/call\\udcff: folder name is not usable as a conversation id"
    stored = json.loads((tmp_path / "w" / "corpus" / "_import.json").read_text())
    assert stored["imported"] == ["good"]
    assert [s["item"] for s in stored["skipped"]] == ["call\\udcff"]


def test_lenient_words_drops_the_bad_word_instead_of_the_conversation(tmp_path: Path) -> None:
    root = tmp_path / "c"
    _conversation(root / "good")
    bad = _conversation(root / "bad")
    words = [{"word": "so", "start": 0.2, "end": 0.4}, {"word": "uh", "start": 0.6, "end": 0.5}]
    (bad / "A.json").write_text(_words_file(words))

    strict = _import_cli(root, tmp_path / "strict")
    (line,) = [x for x in strict.splitlines() if x.startswith("skipped ")]
    assert line == f"skipped {bad / 'A.json'}: words[1]: word 'uh' has end 0.500 s <= start 0.600 s"
    assert "skipped: word end <= start" in strict

    lenient = _import_cli(root, tmp_path / "lenient", "--lenient-words")
    assert not [x for x in lenient.splitlines() if x.startswith("skipped")]
    assert "words dropped: 0 without times, 1 with end <= start" in lenient
    conversations = {c.conversation_id: c for c in read_corpus(tmp_path / "lenient")}
    assert sorted(conversations) == ["bad", "good"]
    assert [w.text for w in conversations["bad"].speakers[0].words] == ["so"]


def test_word_without_text_is_not_the_word_none(tmp_path: Path) -> None:
    root = tmp_path / "c"
    folder = _conversation(root / "call")
    (folder / "B.json").write_text('{"words": [{"word": null, "start": 0.9, "end": 1.2}]}')
    summary = import_corpus(FolderSource(root), tmp_path / "w", min_duration_s=0)
    assert summary.imported == ["call"]
    (conversation,) = read_corpus(tmp_path / "w")
    assert [w.text for w in conversation.speakers[1].words] == [""]
