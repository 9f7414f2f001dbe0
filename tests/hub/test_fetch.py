"""``pmc corpus fetch seamless`` against the fake hub on loopback (pmc.testing.hub)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from pmc.cli import cli
from pmc.corpus import SeamlessSource, import_corpus, read_corpus
from pmc.errors import PmcError
from pmc.hub import DownloadOutcome, FetchSummary, fetch_seamless
from pmc.testing import FakeParticipant, participant, write_extracted, write_tar
from pmc.testing.hub import FakeHub, Fault, Origin, files_under

SPLIT = "V00_S0001_I00000001"
"""Participant A in 0000.tar, B in 0001.tar."""
ONE = "V00_S0002_I00000002"
"""Both participants in 0001.tar."""
ALONE = "V00_S0003_I00000003"
"""One participant only (0000.tar): never a conversation."""
LATER = "V00_S0004_I00000004"
"""Both in 0002.tar, which two conversations never need."""
BATCH = "naturalistic/dev/0000"
SHARDS = [f"{BATCH}/{i:04d}.tar" for i in range(3)]
TOKEN = "hf_fakeTokenForTheLoopbackHub0123456789"
CUT_AT = 20_000
"""Bytes sent before a fault: inside the first shard's second participant (shards are ~55 kB)."""
KILL_DEADLINE_S = 30.0


def _person(file_id: str, hz: float) -> FakeParticipant:
    # One second at 8 kHz keeps each shard near 55 kB; the import test lowers the 7-minute rule.
    return participant(
        file_id, [("hi", 0.2, 0.5)], duration_s=1.0, sample_rate=8000, frequency_hz=hz
    )


@pytest.fixture(scope="module")
def repo_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    root = tmp_path_factory.mktemp("hub-repo")
    write_tar(root, [_person(f"{SPLIT}_P0001", 200), _person(f"{ALONE}_P0005", 230)], archive=0)
    write_tar(
        root,
        [
            _person(f"{ONE}_P0003", 260),
            _person(f"{SPLIT}_P0002", 290),
            _person(f"{ONE}_P0004", 320),
        ],
        archive=1,
    )
    write_tar(root, [_person(f"{LATER}_P0006", 350), _person(f"{LATER}_P0007", 380)], archive=2)
    (root / "README.md").write_text("# fake seamless-interaction\n")
    (root / "naturalistic" / "test" / "0000").mkdir(parents=True)
    (root / "naturalistic" / "test" / "0000" / "README.md").write_text("no shards here\n")
    return files_under(root)


@pytest.fixture
def hub(
    repo_files: dict[str, bytes], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[FakeHub]:
    from huggingface_hub import constants

    with FakeHub(repo_files) as fake:
        monkeypatch.setenv("HF_ENDPOINT", fake.endpoint)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
        for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE"):
            monkeypatch.delenv(name, raising=False)
        # The client reads these once, at import: keep them off whatever the session set.
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "hf-home" / "token"))
        yield fake


def _cached(dest: Path, shard: str) -> Path:
    return dest / ".pmc-fetch" / shard


def _outcomes(summary: FetchSummary) -> dict[str, DownloadOutcome]:
    return dict(summary.archives)


def _ranges(hub: FakeHub, shard: str) -> list[str | None]:
    return [r.range for r in hub.gets(shard)]


def test_fetches_two_interactions_and_the_importer_takes_both(
    hub: FakeHub, repo_files: dict[str, bytes], tmp_path: Path
) -> None:
    dest, work = tmp_path / "si", tmp_path / "work"
    args = ["corpus", "fetch", "seamless", str(dest), "--conversations", "2"]
    result = CliRunner().invoke(cli, [*args, "--workdir", str(work)])
    assert result.exit_code == 0, result.output
    assert f"pmc corpus import seamless {dest} --workdir {work}" in result.output
    # Only the two shards the two interactions need; the third is never asked for.
    assert [len(hub.gets(s)) for s in SHARDS] == [1, 1, 0]
    assert all(r.origin is Origin.CDN for s in SHARDS[:2] for r in hub.gets(s))
    assert any("cursor=" in r.query for r in hub.requests)  # the tree was paged
    for shard in SHARDS[:2]:
        assert _cached(dest, shard).read_bytes() == repo_files[shard]
    extracted = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    people = [
        f"0000/{SPLIT}_P0001",
        f"0001/{SPLIT}_P0002",
        f"0001/{ONE}_P0003",
        f"0001/{ONE}_P0004",
    ]
    assert [p for p in extracted if not p.startswith(".pmc-fetch/")] == sorted(
        f"{BATCH}/{who}.{kind}" for who in people for kind in ("json", "wav")
    )

    args = ["corpus", "import", "seamless", str(dest), "--workdir", str(work)]
    result = CliRunner().invoke(cli, [*args, "--min-duration", "0"])
    assert result.exit_code == 0, result.output
    assert "skipped" not in result.output
    assert sorted(c.conversation_id for c in read_corpus(work)) == [SPLIT, ONE]
    summary = import_corpus(SeamlessSource(dest), tmp_path / "again", min_duration_s=0)
    assert (sorted(summary.imported), summary.skipped, summary.filtered) == ([SPLIT, ONE], [], [])


def test_a_second_run_only_checks(hub: FakeHub, tmp_path: Path) -> None:
    dest = tmp_path / "si"
    first = fetch_seamless(dest, conversations=2)
    assert first.interactions == (ONE, SPLIT)  # within one shard first, then across two
    assert first.files_written == 8 and first.bytes_received > 0
    gets = len(hub.requests)
    again = fetch_seamless(dest, conversations=2)
    assert set(_outcomes(again).values()) == {DownloadOutcome.REUSED}
    assert (again.bytes_received, again.files_written, again.interactions) == (0, 0, (ONE, SPLIT))
    assert not [r for r in hub.requests[gets:] if r.method != "GET" or "/lfs/" in r.path]


def test_choice_prefers_fewest_shards_and_dest_holds_only_the_last_choice(
    hub: FakeHub, tmp_path: Path
) -> None:
    dest = tmp_path / "si"
    fetch_seamless(dest, conversations=2)
    one = fetch_seamless(dest, conversations=1)
    assert one.interactions == (ONE,)
    assert one.files_removed == 4  # the split interaction's files, extracted by the first run
    scan = SeamlessSource(dest).scan()
    assert ([c.item for c in scan.candidates], scan.skipped) == ([ONE], [])
    whole = fetch_seamless(dest, batches=[0])
    assert whole.interactions == (ONE, SPLIT, LATER)  # never the lone participant
    assert _outcomes(whole)[SHARDS[2]] is DownloadOutcome.DOWNLOADED


def test_a_cut_connection_resumes_from_where_it_stopped(
    hub: FakeHub, repo_files: dict[str, bytes], tmp_path: Path
) -> None:
    dest = tmp_path / "si"
    hub.arm(SHARDS[0], Fault.CUT, CUT_AT)
    summary = fetch_seamless(dest, conversations=2)
    assert _ranges(hub, SHARDS[0]) == [None, f"bytes={CUT_AT}-"]
    assert _cached(dest, SHARDS[0]).read_bytes() == repo_files[SHARDS[0]]
    assert summary.bytes_received == len(repo_files[SHARDS[0]]) + len(repo_files[SHARDS[1]])


def test_a_killed_run_resumes_with_a_range_request(
    hub: FakeHub, repo_files: dict[str, bytes], tmp_path: Path
) -> None:
    dest = tmp_path / "si"
    hub.arm(SHARDS[1], Fault.STALL, CUT_AT)
    code = (
        "import sys, pathlib, pmc.hub as c\n"
        "c.fetch_seamless(pathlib.Path(sys.argv[1]), conversations=2)"
    )
    child = subprocess.Popen([sys.executable, "-c", code, str(dest)], env=dict(os.environ))
    try:
        assert hub.wait_sent(SHARDS[1], CUT_AT, KILL_DEADLINE_S)
        part = _cached(dest, SHARDS[1]).with_name("0001.tar.part")
        deadline = time.monotonic() + KILL_DEADLINE_S
        # Driven by progress: kill once every byte sent has reached the partial file.
        while not (part.is_file() and part.stat().st_size == CUT_AT):
            assert time.monotonic() < deadline and child.poll() is None
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
        hub.release()
    assert not _cached(dest, SHARDS[1]).exists()
    summary = fetch_seamless(dest, conversations=2)
    outcomes = _outcomes(summary)
    assert outcomes == {SHARDS[0]: DownloadOutcome.REUSED, SHARDS[1]: DownloadOutcome.RESUMED}
    assert _ranges(hub, SHARDS[1]) == [None, f"bytes={CUT_AT}-"]
    assert summary.bytes_received == len(repo_files[SHARDS[1]]) - CUT_AT
    assert _cached(dest, SHARDS[1]).read_bytes() == repo_files[SHARDS[1]]
    assert summary.interactions == (ONE, SPLIT)


def test_corrupt_bytes_are_fetched_again(
    hub: FakeHub, repo_files: dict[str, bytes], tmp_path: Path
) -> None:
    dest = tmp_path / "si"
    hub.arm(SHARDS[1], Fault.CORRUPT, CUT_AT)  # served damaged once
    summary = fetch_seamless(dest, conversations=2)
    assert _outcomes(summary)[SHARDS[1]] is DownloadOutcome.REFETCHED
    assert _ranges(hub, SHARDS[1]) == [None, None]
    assert _cached(dest, SHARDS[1]).read_bytes() == repo_files[SHARDS[1]]

    # Damaged on disk, its timestamp kept: one byte flipped, then a shard cut short.
    cached = _cached(dest, SHARDS[0])
    stamp = cached.stat()
    data = bytearray(cached.read_bytes())
    data[CUT_AT] ^= 0x01
    cached.write_bytes(bytes(data))
    os.utime(cached, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    _cached(dest, SHARDS[1]).write_bytes(repo_files[SHARDS[1]][:CUT_AT])
    wav = dest / BATCH / "0001" / f"{ONE}_P0003.wav"
    wav.write_bytes(wav.read_bytes()[:-1] + bytes([wav.read_bytes()[-1] ^ 0xFF]))
    again = fetch_seamless(dest, conversations=2)
    assert set(_outcomes(again).values()) == {DownloadOutcome.REFETCHED}
    for shard in SHARDS[:2]:
        assert _cached(dest, shard).read_bytes() == repo_files[shard]
    assert again.files_written == 1
    scan = SeamlessSource(dest).scan()
    assert sorted(c.item for c in scan.candidates) == [SPLIT, ONE]


def test_the_token_goes_to_the_hub_only_and_is_written_nowhere(
    hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    dest = tmp_path / "si"
    fetch_seamless(dest, conversations=2)
    by_origin = {origin: [r for r in hub.requests if r.origin is origin] for origin in Origin}
    assert by_origin[Origin.HUB] and by_origin[Origin.CDN]
    assert {r.authorization for r in by_origin[Origin.HUB]} == {f"Bearer {TOKEN}"}
    assert {r.authorization for r in by_origin[Origin.CDN]} == {None}
    for folder in (dest, tmp_path / "hf-home"):
        for path in folder.rglob("*") if folder.exists() else []:
            assert not path.is_file() or TOKEN.encode() not in path.read_bytes(), path


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"label": "spontaneous", "conversations": 1}, "unknown label 'spontaneous'"),
        ({"split": "val", "conversations": 1}, "unknown split 'val'"),
        ({}, "say how much to fetch"),
        ({"split": "test", "conversations": 1}, "naturalistic/test/0000 holds no archives (.tar)"),
        ({"label": "improvised", "conversations": 1}, "listing improvised/dev: GET /api/datasets/"),
        ({"batches": [7]}, "naturalistic/dev has no batch 0007 (has 0000)"),
        (
            {"repo_id": "facebook/nope", "conversations": 1},
            "GET /api/datasets/facebook/nope/revision/main: HTTP 404 RepoNotFound",
        ),
        ({"revision": "v9", "conversations": 1}, "HTTP 404 RevisionNotFound"),
    ],
)
def test_bad_requests_say_what_is_wrong(
    hub: FakeHub, tmp_path: Path, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(PmcError) as caught:
        fetch_seamless(tmp_path / "si", **kwargs)  # type: ignore[arg-type]
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_cli_prints_a_hub_error_as_one_line(hub: FakeHub, tmp_path: Path) -> None:
    args = ["corpus", "fetch", "seamless", str(tmp_path / "si"), "--batches", "0"]
    result = CliRunner().invoke(cli, [*args, "--revision", "v9"])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    (line,) = [x for x in result.output.splitlines() if x.startswith("Error:")]
    assert "HTTP 404 RevisionNotFound" in line
    result = CliRunner().invoke(cli, [*args, "--label", "spontaneous"])
    assert result.exit_code == 2 and "Invalid value for '--label'" in result.output
    result = CliRunner().invoke(cli, ["corpus", "fetch", "seamless", "x", "--batches", "0,a"])
    assert result.exit_code == 2 and "not a comma-separated list" in result.output


def test_the_importer_skips_hidden_folders(tmp_path: Path) -> None:
    write_extracted(tmp_path, [_person(f"{ONE}_P0003", 200), _person(f"{ONE}_P0004", 250)])
    write_tar(tmp_path / ".pmc-fetch", [_person(f"{SPLIT}_P0001", 300)])
    scan = SeamlessSource(tmp_path).scan()
    assert ([c.item for c in scan.candidates], scan.skipped) == ([ONE], [])
