"""Files of a Hugging Face repository, downloaded so that a killed run resumes and damage is caught.

``huggingface_hub`` lists the tree (sizes and sha256 per file), resolves each file's URL and
follows the hub's redirect (HEAD, with the user's token, if any). The bytes are fetched here: a
``Range`` GET appends to ``NAME.part`` from its current size, the sha256 (or the git blob id of
a small non-LFS file) is checked, and only then is the file renamed into place. The library's
own download restarts a killed transfer from byte 0 and trusts a finished file by its timestamp
(docs/fetching.md), which is why the transfer is not left to it.

The endpoint is the client's own setting (``HF_ENDPOINT``), the token the client's own
(``HF_TOKEN``, else a saved login); the token is sent to the hub's origin only, never to the
storage a file redirects to, and is written nowhere.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pmc.errors import PmcError

if TYPE_CHECKING:
    from huggingface_hub import HfApi

REPO_TYPE = "dataset"
PART_SUFFIX = ".part"
"""A download in progress: ``NAME.part`` beside where ``NAME`` will be."""
ATTEMPTS = 3
"""Transfers of one file in one run: a dropped connection resumes, a bad checksum starts over."""
CONNECT_TIMEOUT_S = 30.0
"""Seconds to open a connection to the storage (three times the client's own 10 s for a HEAD)."""
READ_TIMEOUT_S = 60.0
"""A body that sends nothing for this long is dropped and resumed (the CDN answers in well under
a second; a minute leaves room for a slow link)."""
HASH_BLOCK = 1 << 20
"""Bytes read at a time when checking a file (sha256 runs at about 1.6 GB/s on two cores)."""
ENV_DEFAULTS = {
    # The real hub advertises its Xet storage; disabled, the client's own calls stay on plain
    # HTTPS, the one path pmc's transfer and the fake hub speak (docs/fetching.md "Settings").
    "HF_HUB_DISABLE_XET": "1",
    # Otherwise the client calls a telemetry endpoint beside the files.
    "HF_HUB_DISABLE_TELEMETRY": "1",
}

ByteAdvance = Callable[[int], None]
"""Called with each count of bytes done."""
ByteStart = Callable[[str, int], ByteAdvance]
"""``start(what, total_bytes)``: a file's transfer or check begins; returns its advance."""


def no_progress(what: str, total: int) -> ByteAdvance:
    """A :data:`ByteStart` that draws nothing."""
    return lambda n: None


class Checksum(StrEnum):
    """How a file's bytes are checked."""

    SHA256 = "sha256"
    """LFS files: the ``lfs.oid`` of the tree listing."""
    GIT_BLOB = "git-blob"
    """Small files kept in git: sha1 of ``blob SIZE``, a zero byte and the bytes (``oid``)."""


class DownloadOutcome(StrEnum):
    """What became of one file in one run."""

    REUSED = "reused"
    """Already here, and its checksum matched."""
    DOWNLOADED = "downloaded"
    """Fetched from its first byte."""
    RESUMED = "resumed"
    """A partial file left by an earlier run was completed."""
    REFETCHED = "refetched"
    """A copy here, or a transfer, failed its checksum and was fetched again."""


@dataclass(frozen=True)
class RemoteFile:
    """One file of the repository, as the tree listing describes it."""

    path: str
    size: int
    digest: str
    checksum: Checksum

    @property
    def name(self) -> str:
        """The last part of the path."""
        return self.path.rsplit("/", 1)[-1]

    def to_dict(self) -> dict[str, Any]:
        """A plain dict for JSON."""
        return {
            "path": self.path,
            "size": self.size,
            "digest": self.digest,
            "checksum": self.checksum.value,
        }


@dataclass(frozen=True)
class Listing:
    """One folder of the repository: its files and its sub-folders, each sorted by path."""

    files: tuple[RemoteFile, ...]
    folders: tuple[str, ...]


def hub_endpoint() -> str:
    """The hub to talk to: ``HF_ENDPOINT`` as it is now, else the client's default."""
    from huggingface_hub import constants

    return (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


def _import_client() -> None:
    """Import ``huggingface_hub`` with the settings above (unless the user set them)."""
    for name, value in ENV_DEFAULTS.items():
        os.environ.setdefault(name, value)
    import huggingface_hub  # noqa: F401


@contextmanager
def hub_errors(what: str) -> Iterator[None]:
    """Turn the client's HTTP and network errors into one-line ``PmcError`` s."""
    from huggingface_hub.errors import OfflineModeIsEnabled

    httpx = _http_module()
    try:
        yield
    except OfflineModeIsEnabled:
        raise PmcError(f"{what}: offline mode is on (HF_HUB_OFFLINE); unset it to fetch") from None
    except httpx.HTTPError as exc:
        raise PmcError(f"{what}: {describe_http_error(exc)}") from None


def describe_http_error(exc: Exception) -> str:
    """``METHOD /path: HTTP 404 EntryNotFound`` for an answered request, else the network error."""
    response = getattr(exc, "response", None)
    if response is not None:
        return describe_response(response)
    try:
        request = exc.request  # type: ignore[attr-defined]
        where = f"{request.method} {request.url.path}: "
    except RuntimeError:  # a request error raised before it had a request
        where = ""
    return f"{where}{type(exc).__name__} {exc}".strip()


def describe_response(response: Any) -> str:
    """``METHOD /path: HTTP 404 EntryNotFound``: an answer that was not the one hoped for."""
    request = response.request
    code = response.headers.get("X-Error-Code") or response.reason_phrase
    return f"{request.method} {request.url.path}: HTTP {response.status_code} {code}"


class HubRepo:
    """One repository at one commit: its folders, and its files downloaded one by one.

    Args:
        repo_id: ``owner/name``.
        revision: A branch, tag or commit; resolved once, so every file comes from one commit.
    """

    def __init__(self, repo_id: str, revision: str = "main") -> None:
        _import_client()
        from huggingface_hub import HfApi

        self.repo_id = repo_id
        self.endpoint = hub_endpoint()
        self._api: HfApi = HfApi(endpoint=self.endpoint)
        with hub_errors(f"{repo_id}@{revision}"):
            info = self._api.dataset_info(repo_id, revision=revision, expand=["sha"])
        if not info.sha:
            raise PmcError(f"{repo_id}@{revision}: the hub named no commit")
        self.revision = revision
        self.commit: str = info.sha
        self.received = 0
        """Bytes fetched so far (all files, all attempts)."""

    def listing(self, folder: str) -> Listing:
        """The files and sub-folders directly in ``folder`` (one paged tree request)."""
        from huggingface_hub.hf_api import RepoFile

        with hub_errors(f"{self.repo_id}: listing {folder}"):
            entries = list(
                self._api.list_repo_tree(
                    self.repo_id, folder, revision=self.commit, repo_type=REPO_TYPE
                )
            )
        files = []
        folders = []
        for entry in entries:
            if not isinstance(entry, RepoFile):
                folders.append(entry.path)
            elif entry.lfs is not None:
                files.append(RemoteFile(entry.path, entry.size, entry.lfs.sha256, Checksum.SHA256))
            else:
                files.append(RemoteFile(entry.path, entry.size, entry.blob_id, Checksum.GIT_BLOB))
        return Listing(tuple(sorted(files, key=lambda f: f.path)), tuple(sorted(folders)))

    def download(
        self, file: RemoteFile, target: Path, progress: ByteStart = no_progress
    ) -> DownloadOutcome:
        """Make ``target`` hold ``file``'s bytes, checked; fetch only what is missing or wrong.

        A finished copy is checked and kept if it matches; a partial one (``target.part``) is
        continued from its size. Raises :class:`PmcError` naming the file when it cannot.
        """
        part = target.with_name(target.name + PART_SUFFIX)
        outcome = DownloadOutcome.DOWNLOADED
        if target.exists():
            if target.stat().st_size == file.size and _matches(file, target, progress):
                return DownloadOutcome.REUSED
            target.unlink()
            outcome = DownloadOutcome.REFETCHED
        elif part.exists() and 0 < part.stat().st_size <= file.size:
            outcome = DownloadOutcome.RESUMED
        target.parent.mkdir(parents=True, exist_ok=True)
        location, headers = self._locate(file)
        problem = ""
        for _ in range(ATTEMPTS):
            if part.exists() and part.stat().st_size > file.size:
                part.unlink()
            try:
                self.received += _transfer(location, headers, part, file, progress)
            except _Dropped as exc:
                self.received += exc.received
                problem = str(exc)
                continue
            except PmcError as exc:
                problem = str(exc)
                continue
            if part.stat().st_size == file.size and _matches(file, part, progress):
                os.replace(part, target)
                return outcome
            problem = f"{file.path}: {file.checksum.value} does not match the hub's"
            part.unlink()
            outcome = DownloadOutcome.REFETCHED
        raise PmcError(f"{problem} (after {ATTEMPTS} attempts; run again to resume)")

    def _locate(self, file: RemoteFile) -> tuple[str, dict[str, str]]:
        """Where ``file``'s bytes are (after the hub's redirect), and the headers to ask with."""
        from huggingface_hub import get_hf_file_metadata, get_token, hf_hub_url

        url = hf_hub_url(
            self.repo_id,
            file.path,
            repo_type=REPO_TYPE,
            revision=self.commit,
            endpoint=self.endpoint,
        )
        with hub_errors(f"{self.repo_id}: {file.path}"):
            meta = get_hf_file_metadata(url, endpoint=self.endpoint, retry_on_errors=True)
        location = meta.location
        # The token goes to the hub's own origin only, never to the storage it redirects to.
        same_origin = _origin(location) == _origin(self.endpoint)
        headers = {"Accept-Encoding": "identity"}  # byte offsets must count the file's own bytes
        token = get_token() if same_origin else None
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return location, headers


def _http_module() -> Any:
    """The HTTP library the client uses (``httpx`` in 1.x, ``httpx2`` in 2.x), for its errors.

    ``huggingface_hub.utils.httpx`` names whichever it is (since 1.30); it is resolved lazily,
    so the type checker cannot see it.
    """
    from huggingface_hub import utils

    return utils.httpx  # type: ignore[attr-defined]


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme, parts.netloc.lower()


def _transfer(
    location: str, headers: dict[str, str], part: Path, file: RemoteFile, progress: ByteStart
) -> int:
    """Append the bytes ``part`` lacks, from its current size (one GET, written as they come).

    Returns:
        How many bytes arrived (also when the transfer then failed: they are in the part).
    """
    from huggingface_hub import get_session

    httpx = _http_module()
    have = part.stat().st_size if part.exists() else 0
    if have >= file.size:
        return 0
    received = 0
    timeout = httpx.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
    ask = {**headers, "Range": f"bytes={have}-"} if have else headers
    try:
        with get_session().stream("GET", location, headers=ask, timeout=timeout) as response:
            if response.status_code == 200:
                have = 0  # the whole file, whatever was asked: the part starts again
            elif response.status_code != 206 or not _starts_at(response, have):
                response.read()
                raise PmcError(f"{file.path}: {describe_response(response)}")
            advance = progress(file.name, file.size)
            advance(have)
            with part.open("r+b" if have else "wb", buffering=0) as handle:
                handle.seek(have)
                handle.truncate()
                for chunk in response.iter_bytes():
                    handle.write(chunk)  # unbuffered: a killed run keeps every byte it got
                    received += len(chunk)
                    advance(len(chunk))
    except httpx.HTTPError as exc:
        raise _Dropped(f"{file.path}: {describe_http_error(exc)}", received) from None
    return received


class _Dropped(PmcError):
    """A transfer that failed after ``received`` bytes had arrived."""

    def __init__(self, message: str, received: int) -> None:
        super().__init__(message)
        self.received = received


def _starts_at(response: Any, offset: int) -> bool:
    """Whether a 206 answer's ``Content-Range`` begins at ``offset``."""
    answered = str(response.headers.get("Content-Range", ""))
    return answered.startswith(f"bytes {offset}-")


def _matches(file: RemoteFile, path: Path, progress: ByteStart) -> bool:
    """Whether ``path``'s bytes have ``file``'s checksum."""
    advance = progress(f"checking {file.name}", file.size)
    if file.checksum is Checksum.SHA256:
        digest = hashlib.sha256()
    else:
        digest = hashlib.sha1(b"blob %d\0" % path.stat().st_size, usedforsecurity=False)
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(HASH_BLOCK), b""):
            digest.update(block)
            advance(len(block))
    return digest.hexdigest() == file.digest


__all__ = [
    "ByteAdvance",
    "ByteStart",
    "Checksum",
    "DownloadOutcome",
    "HubRepo",
    "Listing",
    "RemoteFile",
    "no_progress",
]
