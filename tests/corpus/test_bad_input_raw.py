"""Bad input in Seamless's raw layout: one line naming the file, that conversation skipped."""

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from pmc.cli import cli
from pmc.corpus import SeamlessSource, import_corpus
from pmc.errors import Problem
from pmc.testing import participant, write_raw
from tests.corpus.seamless_pairs import BAD, GOOD, pair

FILE = f"{BAD}_P0001"
"""The participant each case spoils."""


def _wav(base: Path) -> Path:
    return base / "audio" / f"{FILE}.wav"


def _transcript(base: Path) -> Path:
    return base / "metadata" / "transcript" / f"{FILE}.jsonl"


def _vad(base: Path) -> Path:
    return base / "metadata" / "vad" / f"{FILE}.jsonl"


def _words(*words: str) -> str:
    return json.dumps({"start": 0.5, "end": 0.8, "words": [json.loads(w) for w in words]}) + "\n"


Spoil = Callable[[Path], object]
CASES: dict[str, tuple[Spoil, Problem, Callable[[Path], Path], str]] = {
    "no WAV": (lambda b: _wav(b).unlink(), Problem.MISSING_FILE, _wav, "missing WAV"),
    "WAV without samples": (
        lambda b: _wav(b).write_bytes(participant(FILE, [], duration_s=0).wav()),
        Problem.EMPTY_AUDIO,
        _wav,
        "empty WAV (no samples)",
    ),
    "corrupt WAV": (
        lambda b: _wav(b).write_bytes(b"RIFF\x24\x00\x00\x00WAVEjunk"),
        Problem.CORRUPT_AUDIO,
        _wav,
        "corrupt WAV (",
    ),
    "WAV shorter than its words": (
        lambda b: _transcript(b).write_text(_words('{"word": "hi", "start": 4.0, "end": 4.4}')),
        Problem.AUDIO_SHORTER_THAN_TRANSCRIPT,
        _wav,
        "WAV shorter than its transcript (audio 3.00 s, words or activity run to 4.40 s)",
    ),
    "transcript not UTF-8": (
        lambda b: _transcript(b).write_bytes('{"transcript": "caf\u00e9"}\n'.encode("latin-1")),
        Problem.NOT_UTF8,
        _transcript,
        "not UTF-8 (byte 19)",
    ),
    "transcript line not JSON": (
        lambda b: _transcript(b).write_text(_words() + "{oops\n"),
        Problem.BAD_JSON,
        _transcript,
        "line 2: invalid JSON (",
    ),
    "transcript words not a list": (
        lambda b: _transcript(b).write_text('{"words": 3}\n'),
        Problem.BAD_RECORD,
        _transcript,
        "line 1: 'words' is not a list",
    ),
    "word time not a finite number": (
        lambda b: _transcript(b).write_text(_words('{"word": "hi", "start": NaN, "end": 0.8}')),
        Problem.BAD_RECORD,
        _transcript,
        "line 1: words[0]: 'start' is not a finite number (nan)",
    ),
    "word end <= start": (
        lambda b: _transcript(b).write_text(_words('{"word": "hi", "start": 0.8, "end": 0.5}')),
        Problem.BAD_WORD_TIMES,
        _transcript,
        "line 1: words[0]: word 'hi' has end 0.500 s <= start 0.800 s",
    ),
    "voice activity not UTF-8": (
        lambda b: _vad(b).write_bytes(
            '{"start": 0.5, "end": 0.8, "n": "\u00e9"}\n'.encode("latin-1")
        ),
        Problem.NOT_UTF8,
        _vad,
        "not UTF-8 (byte 33)",
    ),
    "voice activity line not JSON": (
        lambda b: _vad(b).write_text('{"start": 0.5, "end": 0.8}\n\n{oops\n'),
        Problem.BAD_JSON,
        _vad,
        "line 3: invalid JSON (",
    ),
    "voice activity nested too deeply": (
        lambda b: _vad(b).write_text("[" * 100_000 + "]" * 100_000 + "\n"),
        Problem.BAD_JSON,
        _vad,
        "line 1: invalid JSON (nested too deeply to read)",
    ),
    "voice activity without an end": (
        lambda b: _vad(b).write_text('{"start": 0.5}\n'),
        Problem.BAD_RECORD,
        _vad,
        "line 1: voice-activity record without start or end",
    ),
    "no voice-activity file": (
        lambda b: _vad(b).unlink(),
        Problem.MISSING_VAD,
        _vad,
        "missing voice-activity file",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_file_skips_only_its_conversation(tmp_path: Path, case: str) -> None:
    spoil, problem, at_fault, text = CASES[case]
    root = tmp_path / "src"
    base = write_raw(root, [*pair(GOOD), *pair(BAD)])
    spoil(base)
    summary = import_corpus(SeamlessSource(root), tmp_path / "w", min_duration_s=0)
    assert summary.imported == [GOOD]
    (skipped,) = summary.skipped
    assert (skipped.item, skipped.problem) == (BAD, problem)
    assert skipped.message.startswith(f"{at_fault(base)}: {text}")
    assert "\n" not in skipped.message
    stored = json.loads((tmp_path / "w" / "corpus" / "_import.json").read_text())
    assert stored["skipped_by_problem"] == {problem.value: 1}


def _import_cli(root: Path, workdir: Path, *flags: str) -> str:
    args = ["corpus", "import", "seamless", str(root), "--workdir", str(workdir)]
    result = CliRunner().invoke(cli, [*args, "--min-duration", "0", *flags])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return result.output


def test_lenient_words_drops_the_bad_word_instead_of_the_conversation(tmp_path: Path) -> None:
    root = tmp_path / "src"
    base = write_raw(root, [*pair(GOOD), *pair(BAD)])
    bad_word = '{"word": "uh", "start": 0.7, "end": 0.7}'
    _transcript(base).write_text(_words('{"word": "hi", "start": 0.5, "end": 0.6}', bad_word))

    strict = _import_cli(root, tmp_path / "strict")
    (line,) = [x for x in strict.splitlines() if x.startswith("skipped ")]
    assert line == (
        f"skipped {_transcript(base)}: line 1: words[1]: word 'uh' has end 0.700 s <= start 0.700 s"
    )
    assert "skipped: word end <= start" in strict

    lenient = _import_cli(root, tmp_path / "lenient", "--lenient-words")
    assert not [x for x in lenient.splitlines() if x.startswith("skipped")]
    assert "words dropped: 0 without times, 1 with end <= start" in lenient
    stored = json.loads((tmp_path / "lenient" / "corpus" / "_import.json").read_text())
    assert stored["imported"] == [GOOD, BAD]
    assert stored["words_dropped"] == {"end_not_after_start": 1, "untimed": 0}
    kept = json.loads((tmp_path / "lenient" / "corpus" / f"{BAD}.json").read_text())
    texts = [w["text"] for s in kept["speakers"] for w in s["words"]]
    assert sorted(texts) == ["hey", "hi"]


def test_file_name_that_is_not_utf8_is_skipped_not_a_crash(tmp_path: Path) -> None:
    root = tmp_path / "src"
    write_raw(root, pair(GOOD))
    odd = Path(os.fsdecode(os.fsencode(root) + b"/disk\xff"))
    base = write_raw(odd, pair(BAD))
    output = _import_cli(root, tmp_path / "w")
    (line,) = [x for x in output.splitlines() if x.startswith("skipped ")]
    shown = str(_wav(base)).replace("\udcff", "\\udcff")
    assert line == f"skipped {shown}: file name is not valid UTF-8 (rename the file or its folders)"
    stored = json.loads((tmp_path / "w" / "corpus" / "_import.json").read_text())
    assert stored["imported"] == [GOOD]
    assert stored["skipped_by_problem"] == {"malformed record": 1}
