"""The review app's server over raw HTTP: what it serves, what it refuses, what it records."""

from __future__ import annotations

import http.client
import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from pmc.review import read_log
from pmc.review_app import BEFORE_BOUNDARY_S, Refused, ReviewServer, served_file


@pytest.fixture
def server(review_built: Path, tmp_path: Path) -> Iterator[ReviewServer]:
    copy = tmp_path / "w"
    shutil.copytree(review_built, copy)
    app = ReviewServer(copy, "ann", port=0, candidates=True).start()
    yield app
    app.close()


def _get(
    app: ReviewServer, path: str, headers: dict[str, str] | None = None
) -> tuple[int, bytes, dict[str, str]]:
    connection = http.client.HTTPConnection("127.0.0.1", app.port, timeout=30)
    # The path goes out exactly as written: no client-side normalisation of '..'.
    connection.putrequest("GET", path, skip_host=True)
    connection.putheader("Host", (headers or {}).pop("Host", f"127.0.0.1:{app.port}"))
    for key, value in (headers or {}).items():
        connection.putheader(key, value)
    connection.endheaders()
    response = connection.getresponse()
    body = response.read()
    connection.close()
    return response.status, body, dict(response.getheaders())


def _post(
    app: ReviewServer, path: str, body: Any, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", app.port, timeout=30)
    sent = {"Content-Type": "application/json", **(headers or {})}
    connection.request("POST", path, json.dumps(body), sent)
    response = connection.getresponse()
    data = json.loads(response.read() or b"null")
    connection.close()
    return response.status, data


@pytest.mark.parametrize(
    "path",
    [
        "/files/../labels/V00_S0001_I00000001.json",
        "/files/points/../../../etc/passwd",
        "/files/%2e%2e/%2e%2e/etc/passwd",
        "/files//etc/passwd",
        "/files/%2Fetc%2Fpasswd",
        "/static/../review/ann.jsonl",
        "/files/labels/V00_S0001_I00000001.json",  # inside the workdir, but not audio
        "/files/corpus/V00_S0001_I00000001.json",
        "/files/points/manifest.jsonl",  # inside points, but not audio
        "/static/index.py",
    ],
)
def test_paths_outside_the_points_and_corpus_audio_are_refused(
    server: ReviewServer, path: str
) -> None:
    status, body, _ = _get(server, path)
    assert status == 403, (path, status, body[:200])
    assert b"root:" not in body


def test_the_points_and_corpus_audio_are_served_whole_and_in_ranges(server: ReviewServer) -> None:
    point = next(iter(server.data.points.values()))
    status, body, headers = _get(server, f"/files/points/{point.cuts['live']}")
    assert status == 200 and body[:4] == b"RIFF" and headers["Accept-Ranges"] == "bytes"
    status, part, headers = _get(
        server, f"/files/points/{point.cuts['live']}", {"Range": "bytes=10-19"}
    )
    assert (status, part) == (206, body[10:20])
    assert headers["Content-Range"] == f"bytes 10-19/{len(body)}"


def test_corpus_audio_inside_the_workdir_is_served_and_nothing_else_there(tmp_path: Path) -> None:
    workdir = tmp_path / "w"
    (workdir / "demo-source").mkdir(parents=True)
    for name in ("a.wav", "b.wav"):
        (workdir / "demo-source" / name).write_bytes(b"RIFF")
    corpus = {(workdir / "demo-source" / "a.wav").resolve()}
    assert served_file(workdir, corpus, "demo-source/a.wav").name == "a.wav"
    with pytest.raises(Refused):
        served_file(workdir, corpus, "demo-source/b.wav")  # audio, but not the corpus's


def test_a_window_clip_is_stereo_with_the_person_on_the_left(server: ReviewServer) -> None:
    window = next(w for w in server.data.windows if w.speaker.value == "A")
    status, body, headers = _get(server, f"/audio/window/{window.window_id}.wav")
    assert status == 200 and headers["Content-Type"] == "audio/wav"
    data, rate = sf.read(io.BytesIO(body), dtype="float32")
    assert data.shape[1] == 2
    clip = server.data.clip(window)
    assert clip.start_conv_s == pytest.approx(max(0.0, window.boundary_conv_s - BEFORE_BOUNDARY_S))
    assert len(data) == round((clip.end_conv_s - clip.start_conv_s) * rate)

    def pitch(channel: np.ndarray) -> float:
        spectrum = np.abs(np.fft.rfft(channel))
        return float(np.fft.rfftfreq(len(channel), 1 / rate)[spectrum.argmax()])

    # The builder voices A at 220 Hz and B at 330 Hz (pmc.testing.seamless.participant).
    assert pitch(data[:, 0]) == pytest.approx(220.0, abs=2.0)
    assert pitch(data[:, 1]) == pytest.approx(330.0, abs=2.0)


def test_requests_for_another_host_or_from_another_origin_are_refused(
    server: ReviewServer,
) -> None:
    assert _get(server, "/api/state", {"Host": "evil.example:80"})[0] == 403
    window = server.data.windows[0]
    path = f"/api/window/{window.window_id}/decision"
    body = {"decision": "accept", "reason": None, "note": ""}
    status, _ = _post(server, path, body, {"Origin": "http://evil.example"})
    assert status == 403
    status, _ = _post(server, path, body, {"Content-Type": "text/plain"})
    assert status == 400
    assert read_log(server.data.workdir).entries == []


def test_decisions_are_checked_and_recorded_with_the_label_they_judged(
    server: ReviewServer,
) -> None:
    window = server.data.windows[0]
    path = f"/api/window/{window.window_id}/decision"
    status, data = _post(server, path, {"decision": "reject", "reason": None})
    assert status == 400 and "reason" in data["error"]
    status, data = _post(server, path, {"decision": "reject", "reason": "too loud"})
    assert status == 400
    status, data = _post(server, path, {"decision": "reject", "reason": "unclear audio"})
    assert status == 200 and data["window"]["status"] == "rejected"
    (entry,) = read_log(server.data.workdir, "ann").entries
    assert (entry.target_id, entry.label_id) == (window.window_id, window.label_id)
    assert entry.label_sha256 == window.label_sha256
    assert _get(server, "/api/window/no-such-window")[0] == 404


def test_an_edit_on_a_label_changed_since_it_was_shown_is_refused(server: ReviewServer) -> None:
    cid = server.data.windows[0].conversation_id
    status, body, _ = _get(server, f"/api/conversation/{cid}")
    turn = next(x for x in json.loads(body)["labels"] if x["kind"] == "turn")
    edit = {
        "decision": "move",
        "label_id": turn["id"],
        "label_sha256": turn["sha256"],
        "label": {**turn, "start_conv_s": turn["start_conv_s"] - 0.1},
    }
    path = f"/api/conversation/{cid}/edit"
    status, data = _post(server, path, edit)
    assert status == 200 and data["label"]["start_conv_s"] == round(turn["start_conv_s"] - 0.1, 3)
    status, data = _post(server, path, edit)  # the same edit again: that label is gone
    assert status == 409 and "changed since it was shown" in data["error"]
    entries = read_log(server.data.workdir, "ann").entries
    assert [e.decision.value for e in entries] == ["move"]
    bad = {**edit, "label_sha256": data and "", "label": {**turn, "start_conv_s": 99.0}}
    assert _post(server, path, bad)[0] == 400  # beyond the conversation's end
