"""The fake hub's HTTP side: one handler class answers both origins from :class:`FakeHub`'s state.

What it answers, and how, is in the package's docstring (:mod:`pmc.testing.hub`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from pmc.testing.hub._hub import STALL_TIMEOUT_S, FakeHub, Fault, HubRequest, Origin, git_blob_id


def handler(hub: FakeHub, origin: Origin) -> type[BaseHTTPRequestHandler]:
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
