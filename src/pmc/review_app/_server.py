"""The review app's HTTP server: the page, its JSON API, and audio, on loopback by default.

Only three kinds of file leave the working directory through it: the app's own static files
(by name, from a fixed list), stereo clips made from the corpus's audio, and, under
``/files/``, audio files inside ``WORKDIR/points`` or named by the corpus. A path with ``..``,
an absolute path, or anything else is refused. A request whose Host is not this server's is
refused too, so a web page elsewhere cannot reach the app by rebinding a name to loopback.
The API is listed in docs/review.md.
"""

from __future__ import annotations

import json
import re
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from pmc.errors import PmcError
from pmc.points import points_dir
from pmc.review_app._audio import StereoClips
from pmc.review_app._data import BadRequest, Conflict, NotFound, ReviewData

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/static/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/static/app.css": ("app.css", "text/css; charset=utf-8"),
}
AUDIO_SUFFIXES = {".wav": "audio/wav", ".flac": "audio/flac", ".mp3": "audio/mpeg"}
MAX_BODY = 64 * 1024
"""A decision or an edit is a few hundred bytes; anything near this is not one."""
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "media-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
_WINDOW = re.compile(r"/api/window/([A-Za-z0-9_-]+)(/decision)?")
_CONVERSATION = re.compile(r"/api/conversation/([A-Za-z0-9_.-]+)(/edit)?")
_CLIP = re.compile(r"/audio/(window|conversation)/([A-Za-z0-9_.-]+)\.wav")
_RANGE = re.compile(r"bytes=(\d*)-(\d*)")


class Refused(PmcError):
    """A path outside what the app serves (HTTP 403)."""


def corpus_audio_files(data: ReviewData) -> set[Path]:
    """The corpus's own audio files (plain files, not archive members), resolved."""
    files = set()
    for conversation in data.conversations.values():
        for speaker in conversation.speakers:
            ref = speaker.audio
            if ref.member_offset is None:
                files.add(Path(ref.path).resolve())
    return files


def served_file(workdir: Path, corpus_files: set[Path], relative: str) -> Path:
    """The file ``/files/<relative>`` names, if it is one the app may serve.

    Raises:
        Refused: If the path climbs out (``..``), is absolute, or names anything but an audio
            file inside ``WORKDIR/points`` or one of the corpus's audio files.
    """
    parts = relative.split("/")
    if relative.startswith("/") or "\\" in relative or any(p in ("", ".", "..") for p in parts):
        raise Refused(f"/files/{relative}: not a path inside the working directory")
    path = (workdir / relative).resolve()
    inside_points = path.is_relative_to(points_dir(workdir).resolve())
    if path.suffix.lower() not in AUDIO_SUFFIXES or not (inside_points or path in corpus_files):
        raise Refused(f"/files/{relative}: only the points' and the corpus's audio are served")
    if not path.is_file():
        raise NotFound(f"/files/{relative}: no such file")
    return path


class ReviewServer:
    """The app on one address, for one reviewer; serves on a thread or in the foreground.

    Args:
        workdir: The working directory.
        reviewer: Whose decisions are shown and recorded.
        host: The address to bind (loopback unless asked otherwise).
        port: The port; 0 takes a free one.
        candidates: Every window before the draw, not only the drawn points.
    """

    def __init__(
        self,
        workdir: Path,
        reviewer: str,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        candidates: bool = False,
    ) -> None:
        self.data = ReviewData(workdir, reviewer, candidates)
        self.clips = StereoClips()
        self.corpus_files = corpus_audio_files(self.data)
        handler = type("Handler", (_Handler,), {"app": self})
        try:
            self.httpd = ThreadingHTTPServer((host, port), handler)
        except OSError as exc:
            raise PmcError(f"cannot listen on {host}:{port} ({exc}); try another --port") from None
        self.httpd.daemon_threads = True
        self.host, self.port = host, int(self.httpd.server_address[1])
        self.hosts = {f"{h}:{self.port}" for h in (host, "127.0.0.1", "localhost", "[::1]")}
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Where the app is."""
        return f"http://{self.host}:{self.port}/"

    def start(self) -> ReviewServer:
        """Serve on a background thread (tests); returns self."""
        # A short poll, so that close() (which waits for the loop to notice) returns at once.
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve until interrupted."""
        self.httpd.serve_forever()

    def close(self) -> None:
        """Stop serving and let go of the port."""
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join()
        self.httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    app: ReviewServer
    server_version = "pmc-review"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the terminal shows the app's address, not every request."""

    def _headers(self, status: int, kind: str, length: int, extra: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(length))
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        for key, value in extra.items():
            self.send_header(key, value)
        self.end_headers()

    def _send(
        self, status: int, kind: str, body: bytes, extra: dict[str, str] | None = None
    ) -> None:
        self._headers(status, kind, len(body), extra or {})
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, data: Any) -> None:
        body = json.dumps(data, ensure_ascii=False).encode()
        self._send(status, "application/json; charset=utf-8", body)

    def _error(self, status: HTTPStatus, message: str) -> None:
        self._json(status, {"error": message})

    def _bytes(self, data: bytes, kind: str) -> None:
        """Whole or, when the browser asks for a range, part of a file (seeking needs it)."""
        asked = _RANGE.fullmatch(self.headers.get("Range", "").strip())
        if asked is None or not (asked.group(1) or asked.group(2)):
            self._send(HTTPStatus.OK, kind, data, {"Accept-Ranges": "bytes"})
            return
        first_s, last_s = asked.groups()
        if first_s:
            first = int(first_s)
            last = min(int(last_s), len(data) - 1) if last_s else len(data) - 1
        else:
            first, last = max(0, len(data) - int(last_s)), len(data) - 1
        if first >= len(data) or first > last:
            extra = {"Content-Range": f"bytes */{len(data)}"}
            self._send(HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE, kind, b"", extra)
            return
        extra = {"Accept-Ranges": "bytes", "Content-Range": f"bytes {first}-{last}/{len(data)}"}
        self._send(HTTPStatus.PARTIAL_CONTENT, kind, data[first : last + 1], extra)

    def _route(self, post: bool) -> None:
        if self.headers.get("Host", "") not in self.app.hosts:
            self._error(HTTPStatus.FORBIDDEN, "this app answers only at its own address")
            return
        path = unquote(urlsplit(self.path).path)
        if ".." in path.split("/"):
            self._error(HTTPStatus.FORBIDDEN, "a path may not climb out with '..'")
            return
        try:
            if post:
                self._post(path)
            else:
                self._get(path)
        except BadRequest as exc:
            self._error(HTTPStatus.BAD_REQUEST, str(exc))
        except Refused as exc:
            self._error(HTTPStatus.FORBIDDEN, str(exc))
        except NotFound as exc:
            self._error(HTTPStatus.NOT_FOUND, str(exc))
        except Conflict as exc:
            self._error(HTTPStatus.CONFLICT, str(exc))
        except PmcError as exc:
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, str(exc))

    def do_GET(self) -> None:
        self._route(post=False)

    def do_HEAD(self) -> None:
        self._route(post=False)

    def do_POST(self) -> None:
        self._route(post=True)

    def _get(self, path: str) -> None:
        data = self.app.data
        if path in STATIC:
            name, kind = STATIC[path]
            body = (resources.files("pmc.review_app") / "static" / name).read_bytes()
            self._send(HTTPStatus.OK, kind, body)
        elif path == "/api/state":
            self._json(HTTPStatus.OK, data.state())
        elif (m := _WINDOW.fullmatch(path)) and not m.group(2):
            self._json(HTTPStatus.OK, data.window_detail(m.group(1)))
        elif (m := _CONVERSATION.fullmatch(path)) and not m.group(2):
            self._json(HTTPStatus.OK, data.conversation_detail(m.group(1)))
        elif m := _CLIP.fullmatch(path):
            self._bytes(self._clip(m.group(1), m.group(2)), AUDIO_SUFFIXES[".wav"])
        elif path.startswith("/files/"):
            file = served_file(data.workdir, self.app.corpus_files, path.removeprefix("/files/"))
            self._bytes(file.read_bytes(), AUDIO_SUFFIXES[file.suffix.lower()])
        elif path.startswith(("/files", "/static/", "/audio/")):
            raise Refused(f"{path}: not something this app serves")
        else:
            raise NotFound(f"{path}: no such page")

    def _clip(self, what: str, key: str) -> bytes:
        data = self.app.data
        if what == "window":
            clip = data.clip(data.window(key))
            conversation = data.conversation(clip.conversation_id)
            return self.app.clips.wav(conversation, clip.start_conv_s, clip.end_conv_s, clip.left)
        conversation = data.conversation(key)
        left = conversation.speakers[0].channel
        return self.app.clips.wav(conversation, 0.0, conversation.duration_s, left)

    def _post(self, path: str) -> None:
        origin = self.headers.get("Origin")
        if origin is not None and origin.removeprefix("http://") not in self.app.hosts:
            raise Refused(f"a change from {origin} is refused: only the app itself makes them")
        if not self.headers.get("Content-Type", "").startswith("application/json"):
            raise BadRequest("send the decision as application/json")
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise BadRequest(f"a body of {length} bytes is too large for a decision")
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError as exc:
            raise BadRequest(f"not JSON: {exc}") from None
        if not isinstance(body, dict):
            raise BadRequest("the body is a JSON object")
        data = self.app.data
        if (m := _WINDOW.fullmatch(path)) and m.group(2):
            self._json(HTTPStatus.OK, data.decide(m.group(1), body))
        elif (m := _CONVERSATION.fullmatch(path)) and m.group(2):
            self._json(HTTPStatus.OK, data.edit(m.group(1), body))
        else:
            raise NotFound(f"{path}: nothing to post to")
