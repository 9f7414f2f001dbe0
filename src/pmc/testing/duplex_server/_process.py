"""A :class:`ListeningMoshi` in a process of its own, for measurements.

The child serves until its standard input closes, then prints every session's record as JSON,
which :func:`listening_moshi_process` reads back.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from pmc.testing._child import serve_in_child
from pmc.testing.duplex_server._behaviour import DuplexAnswer, ListenerBehaviour, ListenerSession
from pmc.testing.duplex_server._env import START_TIMEOUT_S
from pmc.testing.duplex_server._listener import ListeningMoshi
from pmc.testing.hosted import answer_audio


@dataclass
class ListenerProcess:
    """A :class:`ListeningMoshi` served by a child process: its URL, then its records."""

    url: str
    sessions: list[ListenerSession] = field(default_factory=list)


@contextmanager
def listening_moshi_process(
    behaviour: ListenerBehaviour | None = None,
) -> Iterator[ListenerProcess]:
    """Serve a :class:`ListeningMoshi` from a child process; its records are read when it stops.

    In its own process (at a lower priority) it takes no interpreter time from the harness
    it is measured by, as a model server on another machine would not. It serves until its
    standard input closes, then prints every session's record as JSON.
    """
    spec = json.dumps(asdict(behaviour or ListenerBehaviour()))
    with serve_in_child("pmc.testing.duplex_server", spec, START_TIMEOUT_S) as child:
        fake = ListenerProcess(child.url)
        yield fake
    fake.sessions = [_session_from(row) for row in child.records]


def _session_from(data: dict[str, Any]) -> ListenerSession:
    """A session's record from its JSON form."""
    return ListenerSession(
        str(data["session_id"]),
        data["seed"],
        int(data["frames"]),
        data["origin_ns"],
        [(str(change), float(at)) for change, at in data["speech"]],
        [DuplexAnswer(**answer) for answer in data["answers"]],
        [int(ns) for ns in data["sent_ns"]],
    )


async def _serve_listener(behaviour: ListenerBehaviour) -> list[ListenerSession]:
    loop = asyncio.get_running_loop()
    closed = asyncio.Event()
    loop.add_reader(sys.stdin.fileno(), closed.set)
    fake = ListeningMoshi(behaviour)
    async with fake.running() as url:
        print(url, flush=True)
        await closed.wait()
    loop.remove_reader(sys.stdin.fileno())
    return fake.sessions


def main(argv: list[str] | None = None) -> None:
    """``python -m pmc.testing.duplex_server SPEC``: a :class:`ListeningMoshi` until stdin ends."""
    spec = json.loads((sys.argv[1:] if argv is None else argv)[0])
    behaviour = ListenerBehaviour(**spec)
    answer_audio(behaviour.reply_text)  # voiced before serving, never during a stream
    os.nice(10)  # the fake stands in for hardware elsewhere: the harness goes first
    sessions = asyncio.run(_serve_listener(behaviour))
    print(json.dumps([asdict(s) for s in sessions]), flush=True)
