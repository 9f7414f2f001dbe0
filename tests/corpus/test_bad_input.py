"""Every bad input the Foundation issue names: one clear message, that item skipped, rest kept."""

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from pmc.cli import cli
from pmc.corpus import SeamlessSource, import_corpus
from pmc.errors import Problem
from pmc.testing import FakeParticipant, write_extracted, write_raw
from tests.corpus.seamless_pairs import BAD, GOOD, pair


def _folder(root: Path) -> Path:
    return root / "naturalistic" / "dev" / "0000" / "0000"


def _empty_wav(p: FakeParticipant) -> FakeParticipant:
    return replace(p, audio=np.zeros(0, dtype=np.float32), transcript=[], vad=[])


def _short_wav(p: FakeParticipant) -> FakeParticipant:
    return replace(p, audio=p.audio[: 48_000 // 2])  # 0.5 s of audio


def _inverted_word(p: FakeParticipant) -> FakeParticipant:
    record = dict(p.transcript[0])
    record["words"] = [{"word": "hi", "start": 0.8, "end": 0.8}]
    return replace(p, transcript=[record])


def _no_vad(p: FakeParticipant) -> FakeParticipant:
    return replace(p, vad=None)


def _late_transcript(p: FakeParticipant) -> FakeParticipant:
    """Half a second of audio, words up to 2.9 s."""
    record = dict(p.transcript[0])
    record["words"] = [{"word": "hi", "start": 2.5, "end": 2.9}]
    return replace(_short_wav(p), transcript=[record])


CASES: dict[str, tuple[Callable[[FakeParticipant], FakeParticipant], Problem, str]] = {
    "empty wav": (_empty_wav, Problem.EMPTY_AUDIO, "empty WAV"),
    "wav shorter than transcript": (
        _late_transcript,
        Problem.AUDIO_SHORTER_THAN_TRANSCRIPT,
        "WAV shorter than its transcript",
    ),
    "word end <= start": (_inverted_word, Problem.BAD_WORD_TIMES, "end 0.800 s <= start 0.800 s"),
    "missing vad": (_no_vad, Problem.MISSING_VAD, "missing voice activity"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_participant_skips_only_its_conversation(tmp_path: Path, case: str) -> None:
    spoil, problem, text = CASES[case]
    bad_a, bad_b = pair(BAD)
    write_extracted(tmp_path / "src", [*pair(GOOD), spoil(bad_a), bad_b])
    summary = import_corpus(SeamlessSource(tmp_path / "src"), tmp_path / "w", min_duration_s=0)
    assert summary.imported == [GOOD]
    (skipped,) = summary.skipped
    assert (skipped.item, skipped.problem) == (BAD, problem)
    assert text in skipped.message
    assert f"{BAD}_P0001" in skipped.message  # names the file
    assert "\n" not in skipped.message


def test_corrupt_wav(tmp_path: Path) -> None:
    write_extracted(tmp_path / "src", [*pair(GOOD), *pair(BAD)])
    wav = _folder(tmp_path / "src") / f"{BAD}_P0002.wav"
    wav.write_bytes(b"RIFF\x24\x00\x00\x00WAVEfmt garbage that is no header")
    summary = import_corpus(SeamlessSource(tmp_path / "src"), tmp_path / "w", min_duration_s=0)
    assert summary.imported == [GOOD]
    (skipped,) = summary.skipped
    assert skipped.problem is Problem.CORRUPT_AUDIO
    assert skipped.message.startswith(f"{wav}: corrupt WAV")


def test_non_utf8_json(tmp_path: Path) -> None:
    write_extracted(tmp_path / "src", [*pair(GOOD), *pair(BAD)])
    meta = _folder(tmp_path / "src") / f"{BAD}_P0001.json"
    text = '{"metadata:transcript": [], "note": "caf\u00e9"}'
    meta.write_bytes(text.encode("latin-1"))
    summary = import_corpus(SeamlessSource(tmp_path / "src"), tmp_path / "w", min_duration_s=0)
    assert summary.imported == [GOOD]
    (skipped,) = summary.skipped
    assert skipped.problem is Problem.NOT_UTF8
    position = text.index("\u00e9")
    assert skipped.message == f"{meta}: not UTF-8 (byte {position})"


def test_invalid_json_names_the_line(tmp_path: Path) -> None:
    write_extracted(tmp_path / "src", [*pair(GOOD), *pair(BAD)])
    meta = _folder(tmp_path / "src") / f"{BAD}_P0001.json"
    meta.write_text('{\n  "metadata:vad": [\n  oops\n]}')
    summary = import_corpus(SeamlessSource(tmp_path / "src"), tmp_path / "w", min_duration_s=0)
    (skipped,) = summary.skipped
    assert skipped.problem is Problem.BAD_JSON
    assert f"{meta}: line 3: invalid JSON" in skipped.message


def test_missing_vad_file_in_raw_layout(tmp_path: Path) -> None:
    bad_a, bad_b = pair(BAD)
    write_raw(tmp_path / "src", [*pair(GOOD), _no_vad(bad_a), bad_b])
    summary = import_corpus(SeamlessSource(tmp_path / "src"), tmp_path / "w", min_duration_s=0)
    assert summary.imported == [GOOD]
    (skipped,) = summary.skipped
    assert skipped.problem is Problem.MISSING_VAD
    assert f"metadata/vad/{BAD}_P0001.jsonl: missing voice-activity file" in skipped.message


def test_bad_word_line_in_raw_layout_names_the_line(tmp_path: Path) -> None:
    bad_a, bad_b = pair(BAD)
    write_raw(tmp_path / "src", [*pair(GOOD), _inverted_word(bad_a), bad_b])
    summary = import_corpus(SeamlessSource(tmp_path / "src"), tmp_path / "w", min_duration_s=0)
    (skipped,) = summary.skipped
    assert f"{BAD}_P0001.jsonl: line 1: words[0]: word 'hi' has end" in skipped.message


def test_lenient_words_drops_the_word_instead(tmp_path: Path) -> None:
    bad_a, bad_b = pair(BAD)
    write_extracted(tmp_path / "src", [*pair(GOOD), _inverted_word(bad_a), bad_b])
    source = SeamlessSource(tmp_path / "src", lenient_words=True)
    summary = import_corpus(source, tmp_path / "w", min_duration_s=0)
    assert sorted(summary.imported) == [GOOD, BAD]
    assert summary.word_stats.inverted == 1


def test_interaction_with_one_participant(tmp_path: Path) -> None:
    write_extracted(tmp_path / "src", [*pair(GOOD), pair(BAD)[0]])
    summary = import_corpus(SeamlessSource(tmp_path / "src"), tmp_path / "w", min_duration_s=0)
    assert summary.imported == [GOOD]
    (skipped,) = summary.skipped
    assert skipped.problem is Problem.UNPAIRED
    assert f"interaction {BAD} has 1 participant(s) ({BAD}_P0001)" in skipped.message


def test_cli_prints_one_line_per_skip_and_a_summary(tmp_path: Path) -> None:
    bad_a, bad_b = pair(BAD)
    write_extracted(tmp_path / "src", [*pair(GOOD), _no_vad(bad_a), bad_b])
    args = ["corpus", "import", "seamless", str(tmp_path / "src"), "--workdir", str(tmp_path / "w")]
    result = CliRunner().invoke(cli, [*args, "--min-duration", "0"])
    assert result.exit_code == 0, result.output
    skip_lines = [line for line in result.output.splitlines() if line.startswith("skipped")]
    assert len(skip_lines) == 1
    assert f"{BAD}_P0001.json: missing voice activity" in skip_lines[0]
    assert "Traceback" not in result.output
    assert "imported" in result.output and "skipped: missing voice activity" in result.output


def test_cli_fails_only_when_nothing_could_be_read(tmp_path: Path) -> None:
    write_extracted(tmp_path / "src", [pair(BAD)[0]])
    args = ["corpus", "import", "seamless", str(tmp_path / "src"), "--workdir", str(tmp_path / "w")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1
    assert "no conversation could be read" in result.output
    assert "Traceback" not in result.output
    # Too short to keep is still read: no failure.
    write_extracted(tmp_path / "src2", pair(GOOD))
    args[3] = str(tmp_path / "src2")
    assert CliRunner().invoke(cli, args).exit_code == 0
