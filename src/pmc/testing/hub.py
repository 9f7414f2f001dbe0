"""A fake of the Hugging Face Hub's file API on loopback, serving one repository from memory.

It answers what ``huggingface_hub`` asks of a hub when it lists and downloads files
(docs/fetching.md): the revision (``/api/{type}s/{id}/revision/{rev}``), the tree of a folder
(``/api/{type}s/{id}/tree/{rev}/{path}``, paged with a ``Link`` header like the real hub), and
``HEAD``/``GET`` on ``/{type}s/{id}/resolve/{rev}/{path}``. Large (LFS) files are answered, as
the real hub does, with a 302 to a second origin (the CDN: another port), carrying
``X-Repo-Commit``, ``X-Linked-Etag`` (the sha256) and ``X-Linked-Size``; small files are served
from the hub itself. Both honour ``Range: bytes=N-`` with 206 and ``Content-Range``. Errors carry
the hub's ``X-Error-Code`` (``RepoNotFound``, ``RevisionNotFound``, ``EntryNotFound``).

Tests can arm one-shot faults on a file (:class:`Fault`: cut the body, stall it, or serve it
corrupted) and read every request back (:class:`HubRequest`), including its ``Range`` and whether
it carried a token. Standard library only; both servers run in threads on 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

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
        for origin in Origin:
            server = ThreadingHTTPServer((HOST, 0), _handler(self, origin))
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


def _handler(hub: FakeHub, origin: Origin) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        pass

    Handler.hub = hub
    Handler.origin = origin
    return Handler


class _Handler(BaseHTTPRequestHandler):
    """Answers one request on either origin."""

    protocol_version = "HTTP/1.1"  # keep-alive, as the real hub; every answer has a length
    hub: FakeHub
    origin: Origin

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read :attr:`FakeHub.requests` instead."""

    def do_GET(self) -> None:
        self._answer("GET")

    def do_HEAD(self) -> None:
        self._answer("HEAD")

    def _answer(self, method: str) -> None:
        url = urlsplit(self.path)
        path = unquote(url.path)
        self.hub._record(
            HubRequest(
                self.origin,
                method,
                path,
                url.query,
                self.headers.get("Range"),
                self.headers.get("Authorization"),
            )
        )
        if self.origin is Origin.CDN:
            self._cdn(method, path)
            return
        api = f"/api/{self.hub.repo_type}s/"
        resolve = f"/{self.hub.repo_type}s/"
        if path.startswith(api):
            self._api(path[len(api) :], parse_qs(url.query))
        elif path.startswith(resolve) and "/resolve/" in path:
            self._resolve(method, path[len(resolve) :])
        else:
            self._error(404, "RepoNotFound", f"no route {path}")

    # -- the hub ----------------------------------------------------------------------------

    def _api(self, rest: str, query: dict[str, list[str]]) -> None:
        repo = self.hub.repo_id
        if not rest.startswith(f"{repo}/"):
            self._error(404, "RepoNotFound", "Repository not found")
            return
        kind, _, rest = rest[len(repo) + 1 :].partition("/")
        revision, _, folder = rest.partition("/")
        if not self.hub.known_revision(revision):
            self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
            return
        if kind == "revision":
            self._json({"id": repo, "sha": self.hub.commit, "private": False})
        elif kind == "tree":
            self._tree(revision, folder.strip("/"), query)
        else:
            self._error(404, "RepoNotFound", f"no route {kind}")

    def _tree(self, revision: str, folder: str, query: dict[str, list[str]]) -> None:
        recursive = query.get("recursive", ["false"])[0].lower() == "true"
        paths = self.hub.children(folder, recursive)
        if paths is None:
            self._error(404, "EntryNotFound", f"{folder} does not exist on {revision}")
            return
        start = int(query.get("cursor", ["0"])[0])
        page = paths[start : start + self.hub.page_size]
        headers = {}
        if start + self.hub.page_size < len(paths):
            base = f"{self.hub.endpoint}/api/{self.hub.repo_type}s/{self.hub.repo_id}/tree"
            where = f"/{quote(folder, safe='')}" if folder else ""
            cursor = start + self.hub.page_size
            link = f"{base}/{revision}{where}?recursive={recursive}&cursor={cursor}"
            headers["Link"] = f'<{link}>; rel="next"'
        self._json([self.hub.tree_entry(p) for p in page], headers)

    def _resolve(self, method: str, rest: str) -> None:
        repo = self.hub.repo_id
        if not rest.startswith(f"{repo}/resolve/"):
            self._error(404, "RepoNotFound", "Repository not found")
            return
        revision, _, path = rest[len(repo) + len("/resolve/") :].partition("/")
        if not self.hub.known_revision(revision):
            self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
            return
        if path not in self.hub.files:
            self._error(404, "EntryNotFound", f"{path} does not exist on {revision}")
            return
        commit = {"X-Repo-Commit": self.hub.commit}
        if self.hub.is_lfs(path):
            sha = self.hub.sha256[path]
            self.send_response(302)
            for name, value in {
                **commit,
                "Location": f"{self.hub.cdn}/lfs/{sha}/{quote(path)}",
                "X-Linked-Etag": f'"{sha}"',
                "X-Linked-Size": str(len(self.hub.files[path])),
                "ETag": f'"{git_blob_id(self.hub.files[path])}"',
                "Content-Length": "0",
            }.items():
                self.send_header(name, value)
            self.end_headers()
            return
        etag = {"ETag": f'"{git_blob_id(self.hub.files[path])}"', **commit}
        self._bytes(method, path, etag)

    # -- the CDN ----------------------------------------------------------------------------

    def _cdn(self, method: str, path: str) -> None:
        _, _, rest = path.partition("/lfs/")
        sha, _, repo_path = rest.partition("/")
        if self.hub.sha256.get(repo_path) != sha:
            self._error(404, "EntryNotFound", "no such object")
            return
        self._bytes(method, repo_path, {"ETag": f'"{sha}"'})

    # -- bodies -----------------------------------------------------------------------------

    def _bytes(self, method: str, path: str, headers: dict[str, str]) -> None:
        """A file's bytes, whole (200) or from a ``bytes=N-`` range (206), with any armed fault."""
        data = self.hub.files[path]
        start = _range_start(self.headers.get("Range"))
        if start is not None and start >= len(data) > 0:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{len(data)}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        status = 200 if start is None else 206
        begin = start or 0
        body = data[begin:]
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        if status == 206:
            self.send_header("Content-Range", f"bytes {begin}-{len(data) - 1}/{len(data)}")
        self.end_headers()
        if method == "HEAD":
            return
        armed = self.hub._take_fault(path)
        if armed is None:
            self._send_body(path, body)
            return
        if armed.fault is Fault.CORRUPT and body:
            flipped = bytearray(body)
            flipped[min(armed.after_bytes, len(body) - 1)] ^= 0xFF
            self._send_body(path, bytes(flipped))
            return
        self._send_body(path, body[: armed.after_bytes])
        if armed.fault is Fault.STALL:
            self.hub._released.wait(STALL_TIMEOUT_S)
        self.close_connection = True

    def _send_body(self, path: str, body: bytes) -> None:
        self.wfile.write(body)
        self.wfile.flush()
        self.hub._count_sent(path, len(body))

    def _json(self, data: Any, headers: Mapping[str, str] | None = None) -> None:
        body = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _error(self, status: int, code: str, message: str) -> None:
        body = json.dumps({"error": message}).encode()
        self.send_response(status)
        self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", message)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


def _range_start(header: str | None) -> int | None:
    """N from ``bytes=N-`` (the only form clients resuming a download send); None without one."""
    if not header or not header.startswith("bytes=") or not header.endswith("-"):
        return None
    return int(header[len("bytes=") : -1])


@contextmanager
def fake_hub(files: Mapping[str, bytes], **kwargs: Any) -> Iterator[FakeHub]:
    """A started :class:`FakeHub` for the block (``kwargs`` as its constructor's)."""
    with FakeHub(files, **kwargs) as hub:
        yield hub


__all__ = [
    "DEFAULT_REPO_ID",
    "FakeHub",
    "Fault",
    "HubRequest",
    "Origin",
    "fake_hub",
    "files_under",
    "git_blob_id",
]
