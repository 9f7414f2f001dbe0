"""A fake hosted server in a process of its own, for measurements.

A real hosted API runs elsewhere and costs the harness nothing; in its own process (so on
another core, and at a lower priority) a fake takes no interpreter time from the harness it is
measured by. The child serves until its standard input closes, then prints every session's
record as JSON, which :func:`fake_process` reads back.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from pmc.testing._child import serve_in_child
from pmc.testing.hosted._behaviour import AnswerRecord, FakeBehaviour, HistoryItem, SessionRecord
from pmc.testing.hosted._gemini import GeminiFakeSession
from pmc.testing.hosted._openai import OpenAIBetaFakeSession, OpenAIFakeSession
from pmc.testing.hosted._server import serve_fake
from pmc.testing.hosted._session import FakeSession
from pmc.testing.hosted._voice import answer_audio
from pmc.testing.hosted._xai import XaiFakeSession

START_TIMEOUT_S = 60.0
"""How long the child may take to start serving (it imports numpy and voices the answer), or
to report and stop."""
SESSIONS: dict[str, type[FakeSession]] = {
    "openai": OpenAIFakeSession,
    "openai-beta": OpenAIBetaFakeSession,
    "xai": XaiFakeSession,
    "gemini": GeminiFakeSession,
}
"""The fakes by dialect name (:class:`pmc.testing.hosted.Dialect`'s values)."""


@dataclass
class FakeProcess:
    """A fake served by a child process: its URL, and its records once it has stopped."""

    url: str
    sessions: list[SessionRecord] = field(default_factory=list)

    def session(self, session_id: str) -> SessionRecord:
        """A session's record by the id the client was given (after the process stopped)."""
        for record in self.sessions:
            if record.session_id == session_id:
                return record
        raise KeyError(session_id)


def _behaviour_from(data: dict[str, Any]) -> FakeBehaviour:
    return FakeBehaviour(**{**data, "delta_bytes": tuple(data["delta_bytes"])})


_NESTED = ("answers", "speech", "speech_sent", "history", "vad_on")


def _record_from(data: dict[str, Any]) -> SessionRecord:
    record = SessionRecord(**{k: v for k, v in data.items() if k not in _NESTED})
    record.speech = [(str(change), float(at)) for change, at in data["speech"]]
    record.speech_sent = [(str(change), float(at)) for change, at in data["speech_sent"]]
    record.answers = [AnswerRecord(**answer) for answer in data["answers"]]
    on = data.get("vad_on")
    record.vad_on = None if on is None else (int(on[0]), int(on[1]))
    record.history = [
        HistoryItem(h["role"], h["text"], base64.b64decode(h["pcm"]), h["rate"])
        for h in data["history"]
    ]
    return record


def _plain(record: SessionRecord) -> dict[str, Any]:
    """A record as JSON-ready data (the history's audio bytes as base64)."""
    data = asdict(record)
    for item in data["history"]:
        item["pcm"] = base64.b64encode(item["pcm"]).decode("ascii")
    return data


@contextmanager
def fake_process(
    dialect: str, behaviour: FakeBehaviour | None = None, auth_header: str = "Authorization"
) -> Iterator[FakeProcess]:
    """Serve a fake of ``dialect`` from a child process; its records are read when it stops."""
    spec = json.dumps(
        {
            "dialect": dialect,
            "behaviour": asdict(behaviour or FakeBehaviour()),
            "auth_header": auth_header,
        }
    )
    with serve_in_child("pmc.testing.hosted", spec, START_TIMEOUT_S) as child:
        fake = FakeProcess(child.url)
        yield fake
    fake.sessions = [_record_from(r) for r in child.records]


async def _serve(dialect: str, behaviour: FakeBehaviour, auth_header: str) -> list[SessionRecord]:
    loop = asyncio.get_running_loop()
    closed = asyncio.Event()
    loop.add_reader(sys.stdin.fileno(), closed.set)
    async with serve_fake(SESSIONS[dialect], behaviour, auth_header) as server:
        print(server.url, flush=True)
        await closed.wait()
    loop.remove_reader(sys.stdin.fileno())
    return server.sessions


def main(argv: list[str] | None = None) -> None:
    """``python -m pmc.testing.hosted SPEC``: serve until stdin closes, then report."""
    spec = json.loads((sys.argv[1:] if argv is None else argv)[0])
    behaviour = _behaviour_from(spec["behaviour"])
    answer_audio(behaviour.reply_text)  # voiced before serving, never during a stream
    os.nice(10)  # the fake stands in for hardware elsewhere: the harness goes first
    sessions = asyncio.run(_serve(spec["dialect"], behaviour, spec["auth_header"]))
    print(json.dumps([_plain(s) for s in sessions]), flush=True)
