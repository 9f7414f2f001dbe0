"""``pmc corpus fetch seamless``: just the needed part of Seamless Interaction, from its hub repo.

The dataset repository holds WebDataset shards ``{label}/{split}/{batch:04d}/{archive:04d}.tar``
(about 1 GB each) and no list of which participant sits in which shard (that list,
``assets/filelist.csv``, ships with Meta's GitHub code, not with the data; docs/fetching.md).
So the shards of a batch are read in order, each one's member names listed as it arrives, until
enough interactions are whole: both participants seen, even when they sit in different shards.

Shards are kept, checked, in ``DEST/.pmc-fetch/`` (the importer skips hidden folders); only the
chosen interactions' ``.wav`` and ``.json`` members are copied out, atomically, into the
extracted layout ``DEST/{label}/{split}/{batch}/{archive}/{file_id}.{wav,json}``, so that
``pmc corpus import seamless DEST`` finds exactly them. DEST always holds the last fetch's choice:
files an earlier fetch extracted and this one did not choose are removed.
"""

from __future__ import annotations

import re
import tarfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pmc import io
from pmc.corpus import SEAMLESS_FILE_ID as FILE_ID
from pmc.corpus import SEAMLESS_FOLDER_SPLITS as SPLITS
from pmc.corpus import SEAMLESS_LABELS
from pmc.errors import PmcError
from pmc.hub._download import ByteStart, DownloadOutcome, HubRepo, RemoteFile, no_progress

HUB_REPO_ID = "facebook/seamless-interaction"
SEAMLESS_SPLITS = SPLITS
CACHE_DIR = ".pmc-fetch"
"""Downloaded shards, inside DEST; hidden, so the importer's scan passes it by."""
STATE_FILE = "fetched.json"
FETCH_STATE_SCHEMA_VERSION = 1
EXTRACTED = ("json", "wav")
"""The members the importer reads; the video (``.mp4``) and features (``.npz``) stay behind."""
PARTICIPANTS = 2
"""An interaction is whole with two participants (the importer skips any other count)."""
BATCH = re.compile(r"^\d{4}$")
SHARD = re.compile(r"^\d{4}\.tar$")
COPY_BLOCK = 1 << 20


@dataclass(frozen=True)
class _Member:
    """Where one member's bytes are in its shard."""

    offset: int
    size: int


@dataclass(frozen=True)
class _Participant:
    file_id: str
    shard: RemoteFile
    members: dict[str, _Member]


@dataclass(frozen=True)
class _Interaction:
    key: str
    participants: tuple[_Participant, ...]
    rank: tuple[int, int, str]
    """(the shard that completed it, in reading order; how many shards it spans; its key)."""


@dataclass
class _Pairing:
    """Participants seen so far, and the interactions they made whole, in reading order."""

    waiting: dict[str, list[_Participant]] = field(default_factory=dict)
    whole: list[_Interaction] = field(default_factory=list)
    shards_read: int = 0

    def add(self, shard: RemoteFile, people: dict[str, dict[str, _Member]]) -> None:
        """Take one shard's participants (those with both a ``.wav`` and a ``.json``)."""
        for file_id in sorted(people):
            match = FILE_ID.match(file_id)
            if match is None or set(people[file_id]) != set(EXTRACTED):
                continue
            key = match["key"]
            found = self.waiting.setdefault(key, [])
            if len(found) >= PARTICIPANTS or any(p.file_id == file_id for p in found):
                continue  # already whole (a third participant is left out), or seen twice
            found.append(_Participant(file_id, shard, people[file_id]))
            if len(found) == PARTICIPANTS:
                spans = len({p.shard.path for p in found})
                self.whole.append(_Interaction(key, tuple(found), (self.shards_read, spans, key)))
        self.shards_read += 1


@dataclass(frozen=True)
class FetchSummary:
    """What one fetch chose, downloaded and wrote."""

    dest: Path
    label: str
    split: str
    repo_id: str
    revision: str
    commit: str
    interactions: tuple[str, ...]
    requested: int | None
    """``--conversations`` (None when whole batches were asked for)."""
    archives: tuple[tuple[str, DownloadOutcome], ...]
    """Each shard read, by its path in the repository, and what became of it."""
    bytes_received: int
    cache_bytes: int
    """Bytes of shards now kept in ``DEST/.pmc-fetch``."""
    files_written: int
    files_removed: int

    def count(self, outcome: DownloadOutcome) -> int:
        """How many shards had this outcome."""
        return sum(1 for _, o in self.archives if o is outcome)

    def to_dict(self) -> dict[str, Any]:
        """A plain dict for JSON."""
        return {
            "dest": str(self.dest),
            "label": self.label,
            "split": self.split,
            "repo_id": self.repo_id,
            "revision": self.revision,
            "commit": self.commit,
            "interactions": list(self.interactions),
            "requested": self.requested,
            "archives": {path: outcome.value for path, outcome in self.archives},
            "bytes_received": self.bytes_received,
            "cache_bytes": self.cache_bytes,
            "files_written": self.files_written,
            "files_removed": self.files_removed,
        }


def fetch_seamless(
    dest: Path,
    *,
    label: str = "naturalistic",
    split: str = "dev",
    conversations: int | None = None,
    batches: Sequence[int] | None = None,
    revision: str = "main",
    repo_id: str = HUB_REPO_ID,
    progress: ByteStart | None = None,
) -> FetchSummary:
    """Download whole interactions of Seamless Interaction into ``dest``, ready to import.

    Args:
        dest: The folder to fill (created if missing).
        label: ``naturalistic`` or ``improvised``.
        split: ``dev``, ``test`` or ``train``.
        conversations: Stop once this many interactions are whole: the first to complete when
            the shards are read in order, those within one shard before those across two.
        batches: Only these batches; all their shards when ``conversations`` is None.
        revision: A branch, tag or commit of the repository.
        repo_id: The dataset repository.
        progress: Told of each transfer and check, in bytes.
    """
    _check_request(label, split, conversations, batches)
    repo = HubRepo(repo_id, revision)
    cache = dest / CACHE_DIR
    folder = f"{label}/{split}"
    pairing = _Pairing()
    archives: list[tuple[str, DownloadOutcome]] = []
    for shard in _shards_in_order(repo, folder, batches):
        if conversations is not None and len(pairing.whole) >= conversations:
            break
        path = cache / shard.path
        archives.append((shard.path, repo.download(shard, path, progress or no_progress)))
        pairing.add(shard, _members(path))
    chosen = sorted(pairing.whole, key=lambda i: i.rank)[:conversations]
    written, removed = _extract(dest, cache, chosen, label, split)
    _write_state(cache, repo, label, split, chosen, _wanted(dest, chosen, label, split))
    return FetchSummary(
        dest=dest,
        label=label,
        split=split,
        repo_id=repo_id,
        revision=revision,
        commit=repo.commit,
        interactions=tuple(i.key for i in chosen),
        requested=conversations,
        archives=tuple(archives),
        bytes_received=repo.received,
        cache_bytes=sum(p.stat().st_size for p in cache.rglob("*.tar") if p.is_file()),
        files_written=written,
        files_removed=removed,
    )


def _check_request(
    label: str, split: str, conversations: int | None, batches: Sequence[int] | None
) -> None:
    if label not in SEAMLESS_LABELS:
        raise PmcError(f"unknown label {label!r} (one of: {', '.join(SEAMLESS_LABELS)})")
    if split not in SEAMLESS_SPLITS:
        raise PmcError(f"unknown split {split!r} (one of: {', '.join(SEAMLESS_SPLITS)})")
    if conversations is None and not batches:
        raise PmcError("say how much to fetch: a number of conversations or whole batches")
    if conversations is not None and conversations < 1:
        raise PmcError(f"conversations must be at least 1, not {conversations}")
    if batches is not None and any(b < 0 for b in batches):
        raise PmcError(f"batches are numbered from 0: {', '.join(map(str, batches))}")


def _batches(repo: HubRepo, folder: str, asked: Sequence[int] | None) -> list[str]:
    """The batch folders to read, in order; a batch asked for and absent is an error."""
    names = [p.rsplit("/", 1)[-1] for p in repo.listing(folder).folders]
    found = [n for n in names if BATCH.match(n)]
    if not found:
        raise PmcError(f"{repo.repo_id}: {folder} holds no batches")
    if not asked:
        return found
    wanted = [f"{b:04d}" for b in dict.fromkeys(asked)]
    missing = [b for b in wanted if b not in found]
    if missing:
        have = ", ".join(found)
        raise PmcError(f"{repo.repo_id}: {folder} has no batch {', '.join(missing)} (has {have})")
    return wanted


def _shards_in_order(
    repo: HubRepo, folder: str, batches: Sequence[int] | None
) -> Iterator[RemoteFile]:
    """The shards of each batch in turn, each batch listed only once it is reached."""
    for batch in _batches(repo, folder, batches):
        shards = [f for f in repo.listing(f"{folder}/{batch}").files if SHARD.match(f.name)]
        if not shards:
            raise PmcError(f"{repo.repo_id}: {folder}/{batch} holds no archives (.tar)")
        yield from shards


def _members(path: Path) -> dict[str, dict[str, _Member]]:
    """The ``.wav`` and ``.json`` members of a shard, by file id and kind."""
    people: dict[str, dict[str, _Member]] = {}
    try:
        with tarfile.open(path, "r:") as archive:
            for member in archive:
                stem, _, kind = Path(member.name).name.partition(".")
                if member.isfile() and kind in EXTRACTED:
                    people.setdefault(stem, {})[kind] = _Member(member.offset_data, member.size)
    except (tarfile.TarError, OSError) as exc:
        raise PmcError(f"{path}: unreadable archive ({exc})") from None
    return people


def _target(dest: Path, label: str, split: str, p: _Participant, kind: str) -> Path:
    batch, shard = p.shard.path.split("/")[-2:]
    return dest / label / split / batch / shard.removesuffix(".tar") / f"{p.file_id}.{kind}"


def _wanted(dest: Path, chosen: list[_Interaction], label: str, split: str) -> list[Path]:
    return [
        _target(dest, label, split, p, kind)
        for i in chosen
        for p in i.participants
        for kind in EXTRACTED
    ]


def _extract(
    dest: Path, cache: Path, chosen: list[_Interaction], label: str, split: str
) -> tuple[int, int]:
    """Copy the chosen members out; remove what an earlier fetch extracted and this one did not.

    Returns:
        Files written (absent or different before), files removed.
    """
    wanted = _wanted(dest, chosen, label, split)
    earlier = _read_state_files(cache)
    if (dest / label / split).is_dir():
        io.remove_temporaries(dest / label / split)  # what a killed run was writing
    # Recorded before writing, so that a killed run's files are still known to the next one.
    _write_files(cache, sorted({*earlier, *(str(p.relative_to(dest)) for p in wanted)}))
    written = 0
    for interaction in chosen:
        for p in interaction.participants:
            shard = cache / p.shard.path
            for kind in EXTRACTED:
                target = _target(dest, label, split, p, kind)
                if not _same(target, shard, p.members[kind]):
                    _copy(shard, p.members[kind], target)
                    written += 1
    keep = {str(p.relative_to(dest)) for p in wanted}
    removed = 0
    for relative in earlier:
        if relative not in keep and (dest / relative).is_file():
            (dest / relative).unlink()
            removed += 1
            _remove_empty_parents((dest / relative).parent, dest)
    return written, removed


def _same(target: Path, shard: Path, member: _Member) -> bool:
    """Whether ``target`` already holds exactly the member's bytes."""
    if not target.is_file() or target.stat().st_size != member.size:
        return False
    with target.open("rb") as have, shard.open("rb") as source:
        source.seek(member.offset)
        left = member.size
        while left:
            n = min(COPY_BLOCK, left)
            if have.read(n) != source.read(n):
                return False
            left -= n
    return True


def _copy(shard: Path, member: _Member, target: Path) -> None:
    """Write a member's bytes to ``target`` atomically (a killed run leaves no half file)."""
    with shard.open("rb") as source, io.atomic_open(target, "wb") as out:
        source.seek(member.offset)
        left = member.size
        while left:
            block = source.read(min(COPY_BLOCK, left))
            out.write(block)
            left -= len(block)


def _remove_empty_parents(folder: Path, dest: Path) -> None:
    while folder != dest and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent


def _state_path(cache: Path) -> Path:
    return cache / STATE_FILE


def _read_state_files(cache: Path) -> list[str]:
    path = _state_path(cache)
    if not path.is_file():
        return []
    data = io.read_json(path)
    try:
        io.schema_version(data, FETCH_STATE_SCHEMA_VERSION, str(path))
    except ValueError as exc:
        raise PmcError(str(exc)) from None
    return [str(f) for f in data.get("files", [])]


def _write_files(cache: Path, files: list[str]) -> None:
    path = _state_path(cache)
    data = io.read_json(path) if path.is_file() else {}
    io.write_json(path, {**data, "schema_version": FETCH_STATE_SCHEMA_VERSION, "files": files})


def _write_state(
    cache: Path,
    repo: HubRepo,
    label: str,
    split: str,
    chosen: list[_Interaction],
    files: list[Path],
) -> None:
    """Record what DEST now holds, for the next fetch (never a token: there is none here)."""
    dest = cache.parent
    io.write_json(
        _state_path(cache),
        {
            "schema_version": FETCH_STATE_SCHEMA_VERSION,
            "repo_id": repo.repo_id,
            "revision": repo.revision,
            "commit": repo.commit,
            "label": label,
            "split": split,
            "interactions": [i.key for i in chosen],
            "files": sorted(str(p.relative_to(dest)) for p in files),
        },
    )


__all__ = ["HUB_REPO_ID", "SEAMLESS_SPLITS", "FetchSummary", "fetch_seamless"]
