"""The fake hub's repository, faults and request records, and its two servers' lifecycle."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"
DEFAULT_REPO_ID = "facebook/seamless-interaction"
DEFAULT_PAGE_SIZE = 2
"""Tree entries per page: small, so that a folder of a few files already takes several pages
(the real hub pages by 1000, or 50 with ``expand``)."""
LFS_SUFFIXES = (".tar",)
"""Files stored in LFS, as the dataset's ``.gitattributes`` stores its shards."""
STALL_TIMEOUT_S = 60.0
"""Longest a stalled body waits for :meth:`FakeHub.release` before the server drops it anyway."""
POLL_S = 0.02
"""How often the servers look for a stop request (the default half second would make every
test that starts the fake half a second longer)."""
POINTER_SIZE = 134
"""Bytes of a git-lfs pointer file for a sha256 and a size of a few digits (what the hub reports
as ``pointerSize``; nothing reads it)."""


class Origin(StrEnum):
    """Which of the fake's two servers a request reached."""

    HUB = "hub"
    CDN = "cdn"


class Fault(StrEnum):
    """A one-shot fault on the next ``GET`` of a file's bytes."""

    CUT = "cut"
    """Send the headers and ``after_bytes`` bytes of the body, then close the connection."""
    STALL = "stall"
    """Send ``after_bytes`` bytes, then send nothing until :meth:`FakeHub.release`, then close."""
    CORRUPT = "corrupt"
    """Send the whole body with the byte at ``after_bytes`` (or the last one) flipped."""


@dataclass(frozen=True)
class HubRequest:
    """One request as the fake received it."""

    origin: Origin
    method: str
    path: str
    """The URL path, percent-decoded, without the query."""
    query: str
    range: str | None
    authorization: str | None
    """The ``Authorization`` header as sent (tests compare it with the token they set)."""

    def to_dict(self) -> dict[str, Any]:
        """A plain dict, for printing in a failed assertion."""
        return {
            "origin": self.origin.value,
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "range": self.range,
            "authorized": self.authorization is not None,
        }


@dataclass(frozen=True)
class _Armed:
    fault: Fault
    after_bytes: int


def git_blob_id(data: bytes) -> str:
    """The git blob id the hub reports as a small file's oid: sha1 of ``blob SIZE``, 0, bytes."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def files_under(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` by its ``/``-separated path relative to it (a repo to serve)."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


class FakeHub:
    """One repository served on loopback: a hub origin and a CDN origin.

    Use it as a context manager (it starts and stops both servers), point ``huggingface_hub`` at
    :attr:`endpoint` (``HF_ENDPOINT``), and read :attr:`requests` afterwards.

    Args:
        files: The repository's files, by path (see :func:`files_under`).
        repo_id: The repository's id.
        repo_type: ``dataset``, ``model`` or ``space``.
        page_size: Tree entries per page.
    """

    def __init__(
        self,
        files: Mapping[str, bytes],
        *,
        repo_id: str = DEFAULT_REPO_ID,
        repo_type: str = "dataset",
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> None:
        self.files = dict(files)
        self.repo_id = repo_id
        self.repo_type = repo_type
        self.page_size = page_size
        self.sha256 = {path: hashlib.sha256(data).hexdigest() for path, data in self.files.items()}
        listing = "".join(f"{p}\0{self.sha256[p]}\n" for p in sorted(self.files)).encode()
        self.commit = hashlib.sha1(listing, usedforsecurity=False).hexdigest()
        self.requests: list[HubRequest] = []
        self._faults: dict[str, _Armed] = {}
        self._sent: dict[str, int] = {}
        self._lock = threading.Condition()
        self._released = threading.Event()
        self._servers: dict[Origin, ThreadingHTTPServer] = {}
        self._threads: list[threading.Thread] = []

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> FakeHub:
        """Start both servers on free ports."""
        from pmc.testing.hub._http import handler  # the handler reads this class's state

        for origin in Origin:
            server = ThreadingHTTPServer((HOST, 0), handler(self, origin))
            server.daemon_threads = True
            server.block_on_close = False
            self._servers[origin] = server
            thread = threading.Thread(
                target=server.serve_forever, args=(POLL_S,), name=f"fake-{origin}"
            )
            thread.daemon = True
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        """Release stalled bodies and stop both servers."""
        self.release()
        for server in self._servers.values():
            server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join()
        self._servers.clear()
        self._threads.clear()

    def __enter__(self) -> FakeHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _url(self, origin: Origin) -> str:
        host, port = self._servers[origin].server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def endpoint(self) -> str:
        """The hub's origin, for ``HF_ENDPOINT``."""
        return self._url(Origin.HUB)

    @property
    def cdn(self) -> str:
        """The origin LFS files are redirected to."""
        return self._url(Origin.CDN)

    # -- faults and records -----------------------------------------------------------------

    def arm(self, path: str, fault: Fault, after_bytes: int) -> None:
        """Make the next ``GET`` of ``path``'s bytes fail once in the way ``fault`` says."""
        if path not in self.files:
            raise KeyError(path)
        with self._lock:
            self._faults[path] = _Armed(fault, after_bytes)

    def release(self) -> None:
        """Let stalled bodies end (their connections are then closed, the rest unsent)."""
        self._released.set()

    def wait_sent(self, path: str, nbytes: int, timeout_s: float = 30.0) -> bool:
        """Wait until a ``GET`` of ``path`` has sent at least ``nbytes`` of its body."""
        with self._lock:
            return self._lock.wait_for(lambda: self._sent.get(path, 0) >= nbytes, timeout_s)

    def gets(self, path: str) -> list[HubRequest]:
        """The ``GET`` requests that fetched ``path``'s bytes, in order (hub or CDN)."""
        blob = f"/lfs/{self.sha256.get(path, '')}/{path}"
        resolve = f"/{self.repo_type}s/{self.repo_id}/resolve/"
        return [
            r
            for r in list(self.requests)
            if r.method == "GET"
            and (r.path == blob or (r.path.startswith(resolve) and r.path.endswith(f"/{path}")))
        ]

    def _record(self, request: HubRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _take_fault(self, path: str) -> _Armed | None:
        with self._lock:
            return self._faults.pop(path, None)

    def _count_sent(self, path: str, nbytes: int) -> None:
        with self._lock:
            self._sent[path] = nbytes
            self._lock.notify_all()

    # -- answers ----------------------------------------------------------------------------

    def tree_entry(self, path: str) -> dict[str, Any]:
        """The tree endpoint's entry for a file or a folder."""
        if path not in self.files:
            oid = hashlib.sha1(path.encode(), usedforsecurity=False).hexdigest()
            return {"type": "directory", "oid": oid, "size": 0, "path": path}
        data = self.files[path]
        entry: dict[str, Any] = {"type": "file", "size": len(data), "path": path}
        if self.is_lfs(path):
            pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{self.sha256[path]}"
            entry["oid"] = git_blob_id(f"{pointer}\nsize {len(data)}\n".encode())
            entry["lfs"] = {
                "oid": self.sha256[path],
                "size": len(data),
                "pointerSize": POINTER_SIZE,
            }
        else:
            entry["oid"] = git_blob_id(data)
        return entry

    def children(self, folder: str, recursive: bool) -> list[str] | None:
        """Paths directly under ``folder`` (or all below it), sorted; None when it is no folder."""
        prefix = f"{folder}/" if folder else ""
        below = [p for p in sorted(self.files) if p.startswith(prefix)]
        if not below:
            return None if folder else []
        found: set[str] = set()
        for path in below:
            parts = path[len(prefix) :].split("/")
            if recursive:
                found.update(prefix + "/".join(parts[: i + 1]) for i in range(len(parts)))
            else:
                found.add(prefix + parts[0])
        return sorted(found)

    def is_lfs(self, path: str) -> bool:
        """Whether ``path`` is stored in LFS (redirected to the CDN)."""
        return path.endswith(LFS_SUFFIXES)

    def known_revision(self, revision: str) -> bool:
        """Whether ``revision`` names the one commit (``main`` or its hash)."""
        return revision in ("main", self.commit)


@contextmanager
def fake_hub(files: Mapping[str, bytes], **kwargs: Any) -> Iterator[FakeHub]:
    """A started :class:`FakeHub` for the block (``kwargs`` as its constructor's)."""
    with FakeHub(files, **kwargs) as hub:
        yield hub
