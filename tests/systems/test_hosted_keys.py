"""API keys never reach a file, a log or the output.

Every hosted card runs through ``pmc run`` against its fake with a recognisable key, logging
captured at DEBUG, plus a card whose session breaks (so an ``error.json`` is written too). Then
every file under the working directory (not only the run's folder) and under the directory the
command ran in, the captured log records and the command's output are searched for the key (and
for its base64 form, as it would appear in an encoded header or payload).
"""

import base64
import logging
from pathlib import Path

import pytest
from click.testing import CliRunner

from pmc.cli import cli
from pmc.points import points_dir
from pmc.testing.hosted import Dialect, FakeBehaviour, fake_in_thread
from tests.systems.conftest import HOSTED, KEY, card_at, fakes_for

SHORT = "Right, I see."


def test_no_key_in_the_run_the_logs_or_the_output(
    hosted_points: Path,
    tmp_path: Path,
    hosted_keys: str,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)  # what the command writes to a relative path is searched too
    caplog.set_level(logging.DEBUG)
    for name in ("websockets", "websockets.client", "websockets.server"):
        caplog.set_level(logging.DEBUG, logger=name)
    broken = FakeBehaviour(reply_text=SHORT, close_after=20)
    with (
        fakes_for(HOSTED, FakeBehaviour(reply_text=SHORT)) as fakes,
        fake_in_thread(Dialect.OPENAI.session, broken) as bad,
    ):
        args = ["run", "--workdir", str(hosted_points), "--run-id", "keys", "--retries", "0"]
        for name, dialect in HOSTED.items():
            args += ["--system", str(card_at(name, fakes[dialect].url, tmp_path))]
        args += ["--system", str(card_at("gpt-realtime-300", bad.url, tmp_path, "broken"))]
        result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    run_dir = hosted_points / "runs" / "keys"
    assert len(list(run_dir.rglob("trace.json"))) == 4 * len(HOSTED)
    # The broken card's sessions close before their answers: all four rollouts failed.
    assert len(list(run_dir.rglob("error.json"))) == 4

    needles = [KEY.encode(), base64.b64encode(KEY.encode()), base64.b64encode(KEY.encode())[:16]]
    # The whole working directory (points, this run and every other run in it) and the
    # directory the command ran in (the cards are there).
    files = [p for root in (hosted_points, tmp_path) for p in root.rglob("*") if p.is_file()]
    for path in files:
        data = path.read_bytes()
        for needle in needles:
            assert needle not in data, f"the key leaked into {path}"
    assert len([p for p in files if run_dir in p.parents]) > 4 * len(HOSTED) * 3
    assert len([p for p in files if tmp_path in p.parents]) == len(HOSTED) + 1  # the cards
    # The manifest, the four points' two history tracks, live cut and history text, two replies.
    assert len([p for p in files if points_dir(hosted_points) in p.parents]) == 1 + 4 * 4 + 2
    assert caplog.records, "logging was not captured"
    logged = "\n".join(
        f"{r.name} {r.getMessage()} {r.exc_text or ''} {r.args!r}" for r in caplog.records
    )
    output = result.output + (result.stderr if result.stderr_bytes else "")
    for text in (logged, output):
        for needle in needles:
            assert needle.decode() not in text
    # Each session authenticated with the key in a header; none carried it in the URL (the
    # fakes refuse that), so every session came through.
    assert [len(fakes[d].sessions) for d in sorted(fakes)] == [
        4 * sum(spoken is d for spoken in HOSTED.values()) for d in sorted(fakes)
    ]
    for fake in fakes.values():
        assert all(not s.violations for s in fake.sessions)
