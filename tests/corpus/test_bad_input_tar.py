"""Bad input in Seamless's WebDataset tars: the shard or the item is skipped, the rest imported."""

import io
import json
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from pmc.cli import cli
from pmc.corpus import ImportSummary, SeamlessSource, import_corpus
from pmc.errors import Problem
from pmc.testing import FakeParticipant, participant, write_tar
from tests.corpus.seamless_pairs import BAD, GOOD, pair


def _import(root: Path) -> ImportSummary:
    return import_corpus(SeamlessSource(root), root.parent / "w", min_duration_s=0)


def _shard(root: Path, members: dict[str, bytes]) -> Path:
    """A shard beside the good one's, with exactly these members."""
    path = root / "naturalistic" / "dev" / "0000" / "0001.tar"
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _members(p: FakeParticipant, **replace: bytes) -> dict[str, bytes]:
    files = {"json": p.json_bytes(), "wav": p.wav(), **replace}
    return {f"{p.file_id}.{ext}": data for ext, data in files.items()}


def _headers(path: Path) -> dict[str, tuple[int, int, int]]:
    """Each member's header offset, data offset and size."""
    with tarfile.open(path) as tar:
        return {m.name: (m.offset, m.offset_data, m.size) for m in tar}


def _cut_inside_first_json(path: Path) -> None:
    _, data, size = _headers(path)[f"{BAD}_P0001.json"]
    path.write_bytes(path.read_bytes()[: data + size // 2])


def _cut_inside_last_wav(path: Path) -> None:
    """The first participant whole, the second's audio cut in half: what tarfile reads last."""
    _, data, size = _headers(path)[f"{BAD}_P0002.wav"]
    path.write_bytes(path.read_bytes()[: data + size // 2])


def _cut_at_a_member_boundary(path: Path) -> None:
    """Cut just before the second participant's header: every member left is whole."""
    header, _, _ = _headers(path)[f"{BAD}_P0002.json"]
    path.write_bytes(path.read_bytes()[:header])


def _cut_inside_a_header(path: Path) -> None:
    header, _, _ = _headers(path)[f"{BAD}_P0002.json"]
    path.write_bytes(path.read_bytes()[: header + 100])


def _damage_a_header(path: Path) -> None:
    """Overwrite the second participant's first header: tarfile ends its listing there."""
    header, _, _ = _headers(path)[f"{BAD}_P0002.json"]
    raw = bytearray(path.read_bytes())
    raw[header : header + 512] = b"\x7f" * 512
    path.write_bytes(bytes(raw))


DAMAGE: dict[str, tuple[Callable[[Path], None], str]] = {
    "cut inside the first JSON member": (_cut_inside_first_json, "unexpected end of data"),
    "cut inside the last WAV member": (_cut_inside_last_wav, "unexpected end of data"),
    "cut at a member boundary": (_cut_at_a_member_boundary, "truncated: ends at byte"),
    "cut inside a header": (_cut_inside_a_header, "truncated: ends at byte"),
    "damaged header": (_damage_a_header, "damaged header at byte"),
}


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_damaged_shard_is_skipped_whole_and_the_rest_imported(tmp_path: Path, case: str) -> None:
    damage, reason = DAMAGE[case]
    root = tmp_path / "src"
    write_tar(root, pair(GOOD), archive=0)
    shard = write_tar(root, pair(BAD), archive=1)
    damage(shard)
    summary = _import(root)
    # Nothing of a damaged shard is taken: not the participants it held whole, and never a WAV
    # that stops early or a participant without its other files (reported as unpaired).
    assert summary.imported == [GOOD]
    (skipped,) = summary.skipped
    assert (skipped.item, skipped.problem) == (str(shard), Problem.BAD_ARCHIVE)
    assert skipped.message.startswith(f"{shard}: unreadable tar archive (")
    assert reason in skipped.message
    assert "\n" not in skipped.message
    stored = json.loads((tmp_path / "w" / "corpus" / "_import.json").read_text())
    assert stored["skipped_by_problem"] == {"unreadable archive": 1}


def test_partner_of_a_participant_in_a_damaged_shard_is_unpaired(tmp_path: Path) -> None:
    root = tmp_path / "src"
    first, second = pair(BAD)
    write_tar(root, [*pair(GOOD), first], archive=0)
    shard = write_tar(root, [second], archive=1)
    shard.write_bytes(shard.read_bytes()[:2000])  # inside the WAV member
    summary = _import(root)
    assert summary.imported == [GOOD]
    assert sorted((s.item, s.problem) for s in summary.skipped) == [
        (str(shard), Problem.BAD_ARCHIVE),
        (BAD, Problem.UNPAIRED),
    ]


@pytest.mark.parametrize("content", [b"", b"not a tar archive at all\n" * 40])
def test_unreadable_file_named_tar(tmp_path: Path, content: bytes) -> None:
    root = tmp_path / "src"
    write_tar(root, pair(GOOD), archive=0)
    shard = write_tar(root, pair(BAD), archive=1)
    shard.write_bytes(content)
    summary = _import(root)
    assert summary.imported == [GOOD]
    (skipped,) = summary.skipped
    assert (skipped.item, skipped.problem) == (str(shard), Problem.BAD_ARCHIVE)
    assert skipped.message.startswith(f"{shard}: unreadable tar archive (")


MEMBER_CASES: dict[str, tuple[dict[str, bytes], Problem, str]] = {
    "JSON member is not JSON": (
        {"json": b'{"metadata:vad": [\n  oops\n]}'},
        Problem.BAD_JSON,
        ".json: line 2: invalid JSON (",
    ),
    "JSON member is not UTF-8": (
        {"json": '{"metadata:vad": [], "note": "caf\u00e9"}'.encode("latin-1")},
        Problem.NOT_UTF8,
        ".json: not UTF-8 (byte 33)",  # where the e-acute is,
    ),
    "JSON member is not an object": (
        {"json": b"[]"},
        Problem.BAD_RECORD,
        ".json: top level is not a JSON object",
    ),
    "JSON member without voice activity": (
        {"json": b'{"metadata:transcript": []}'},
        Problem.MISSING_VAD,
        ".json: missing voice activity ('metadata:vad')",
    ),
    "WAV member is corrupt": (
        {"wav": b"RIFF\x24\x00\x00\x00WAVEfmt garbage that is no header"},
        Problem.CORRUPT_AUDIO,
        ".wav: corrupt WAV (",
    ),
    "WAV member has no samples": (
        {"wav": participant("x", [], duration_s=0.0).wav()},
        Problem.EMPTY_AUDIO,
        ".wav: empty WAV (no samples)",
    ),
}


@pytest.mark.parametrize("case", sorted(MEMBER_CASES))
def test_bad_member_skips_only_its_conversation(tmp_path: Path, case: str) -> None:
    replace, problem, text = MEMBER_CASES[case]
    root = tmp_path / "src"
    write_tar(root, pair(GOOD), archive=0)
    first, second = pair(BAD)
    shard = _shard(root, {**_members(first, **replace), **_members(second)})
    summary = _import(root)
    assert summary.imported == [GOOD]
    (skipped,) = summary.skipped
    assert (skipped.item, skipped.problem) == (BAD, problem)
    # Names the archive and the member: archive.tar:member.
    assert skipped.message.startswith(f"{shard}:{first.file_id}{text}")
    assert "\n" not in skipped.message


def test_participant_without_a_wav_member(tmp_path: Path) -> None:
    root = tmp_path / "src"
    write_tar(root, pair(GOOD), archive=0)
    first, second = pair(BAD)
    members = _members(first)
    del members[f"{first.file_id}.wav"]
    shard = _shard(root, {**members, **_members(second)})
    summary = _import(root)
    assert summary.imported == [GOOD]
    (skipped,) = summary.skipped
    assert (skipped.item, skipped.problem) == (BAD, Problem.MISSING_FILE)
    assert skipped.message == f"{shard}:{first.file_id}.wav: missing WAV"


def test_cli_names_a_damaged_shard_in_one_line(tmp_path: Path) -> None:
    root = tmp_path / "src"
    write_tar(root, pair(GOOD), archive=0)
    shard = write_tar(root, pair(BAD), archive=1)
    _cut_inside_last_wav(shard)
    args = ["corpus", "import", "seamless", str(root), "--workdir", str(tmp_path / "w")]
    result = CliRunner().invoke(cli, [*args, "--min-duration", "0"])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    skip_lines = [line for line in result.output.splitlines() if line.startswith("skipped ")]
    assert skip_lines == [f"skipped {shard}: unreadable tar archive (unexpected end of data)"]
    assert "skipped: unreadable archive" in result.output
