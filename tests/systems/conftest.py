"""Fixtures for the hosted adapters: their cards pointed at the fakes, a recognisable key."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import pytest

from pmc import io
from pmc.audio import FloatArray
from pmc.clock import NS_PER_S, VirtualClock
from pmc.harness import RunSettings, run_rollouts, runs_dir, stream_frames
from pmc.points import MANIFEST_FILE, Point, PointKind
from pmc.systems import Preload, SystemAdapter, SystemCard, SystemEvent, bundled_cards, load_card
from pmc.testing.hosted import Dialect, FakeBehaviour, FakeServer, fake_in_thread
from pmc.testing.points import write_points

SYSTEMS = bundled_cards()
HOSTED = {
    "gpt-realtime-300": Dialect.OPENAI,
    "gpt-realtime-500": Dialect.OPENAI,
    "gpt-realtime-semantic-low": Dialect.OPENAI,
    "gemini-3.1-flash-live": Dialect.GEMINI,
    "grok-voice": Dialect.XAI,
}
"""Every bundled hosted card and the fake that speaks its dialect."""
EAGERNESS = ("low", "medium", "high", "auto")
"""GPT Realtime's semantic VAD settings, each a card whose endpointer decides at every point
(``gpt-realtime-semantic-<eagerness>-all``)."""
KEY = "pmc-test-key-Zq7Xv93LkQ"
"""The key every hosted card gets in tests: recognisable wherever it might leak."""

ON_TIME_S = 0.02
"""What the fake sent reaches the client's receipt stamp within this (the issue's tolerance;
on an idle machine it is a few milliseconds), plus :func:`held_off_s`."""


def shortest(
    points: Iterable[Point], kind: PointKind, n: int, *, room_s: float = 0.0
) -> list[Point]:
    """The ``n`` points of ``kind`` with the shortest live streams.

    Each has at least ``room_s`` between its boundary and the boundary's end (room to reply).
    """
    fit = [
        p
        for p in points
        if p.kind is kind and p.boundary_end_stream_s - p.boundary_stream_s >= room_s
    ]
    return sorted(fit, key=lambda p: p.stream_end_conv_s - p.stream_start_conv_s)[:n]


def card_at(name: str, url: str, folder: Path, as_name: str = "", **params: Any) -> Path:
    """A copy of bundled card ``name`` whose endpoint is ``url``, with extra ``[params]``.

    The copy keeps the card's name (so a run records it under the same system name) unless
    ``as_name`` gives another.
    """
    text = (SYSTEMS / f"{name}.toml").read_text()
    text = re.sub(r'(?m)^endpoint = ".*"$', f'endpoint = "{url}"', text)
    lines = "".join(f"{key} = {_toml(value)}\n" for key, value in params.items())
    text = text.replace("[params]\n", f"[params]\n{lines}", 1)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{as_name or name}.toml"
    path.write_text(text)
    return path


def endpoint_on(name: str, url: str) -> str:
    """Bundled card ``name``'s endpoint served at ``url``'s scheme, host and port.

    The card's own path and query stay, so a fake sees the model a card names in its URL.
    """
    endpoint = load_card(SYSTEMS / f"{name}.toml").endpoint
    assert endpoint, name
    card, fake = urlsplit(endpoint), urlsplit(url)
    return urlunsplit((fake.scheme, fake.netloc, card.path, card.query, ""))


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return repr(value)


def load(name: str, url: str, folder: Path, as_name: str = "", **params: Any) -> SystemCard:
    """:func:`card_at`, loaded."""
    return load_card(card_at(name, url, folder, as_name, **params))


@pytest.fixture
def hosted_keys(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Every hosted card's key variable set to :data:`KEY`."""
    for name in HOSTED:
        variable = load_card(SYSTEMS / f"{name}.toml").api_key_env
        assert variable
        monkeypatch.setenv(variable, KEY)
    yield KEY


@pytest.fixture(scope="session")
def hosted_points(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four short points (a pause, two turn ends, a fact recall) spoken by the bundled voice."""
    workdir = tmp_path_factory.mktemp("hosted-points")
    write_points(workdir)
    return workdir


@contextmanager
def fakes_for(
    names: Iterable[str],
    behaviour: FakeBehaviour | None = None,
    keep_messages: bool = False,
    dialects: Mapping[str, Dialect] = HOSTED,
) -> Iterator[dict[Dialect, FakeServer]]:
    """One fake per dialect the named cards speak (``dialects`` says which), each in a thread."""
    with ExitStack() as stack:
        yield {
            dialect: stack.enter_context(
                fake_in_thread(
                    dialect.session,
                    behaviour,
                    auth_header=dialect.auth_header,
                    keep_messages=keep_messages,
                )
            )
            for dialect in sorted({dialects[n] for n in names})
        }


def session_of(trace: dict[str, Any]) -> str:
    """The fake's id for the session a rollout ran in (from the first signal that names it)."""
    for output in trace["outputs"]:
        detail = output["detail"]
        for holder, key in (
            ("session", "id"),
            ("conversation", "id"),
            ("setupComplete", "sessionId"),
        ):
            value = detail.get(holder, {})
            if isinstance(value, dict) and isinstance(value.get(key), str):
                return str(value[key])
    raise AssertionError("no session id in the trace")


def traces(run_dir: Path, system: str) -> dict[str, dict[str, Any]]:
    """Rollout 0's trace of each point, by point id."""
    found = {}
    for path in sorted((run_dir / "rollouts" / system).glob("*/0/trace.json")):
        found[path.parent.parent.name] = json.loads(path.read_text())
    return found


HOSTED_RUN = "hosted"


@pytest.fixture(scope="session")
def hosted_run(
    hosted_points: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, dict[Dialect, FakeServer]]]:
    """Every hosted card run once on :func:`hosted_points` against its fake.

    Each card keeps its endpoint's path and query (the model), on the fake's host. Yields the
    run's folder and the fakes (which kept every client message).
    """
    cards_dir = tmp_path_factory.mktemp("cards")
    with pytest.MonkeyPatch.context() as patch, fakes_for(HOSTED, keep_messages=True) as fakes:
        cards = []
        for name, dialect in HOSTED.items():
            card = load(name, endpoint_on(name, fakes[dialect].url), cards_dir)
            assert card.api_key_env
            patch.setenv(card.api_key_env, KEY)
            cards.append(card)
        tallies = run_rollouts(hosted_points, cards, RunSettings(HOSTED_RUN, retries=0))
    done = {name: (t.done, t.failed) for name, t in tallies.items()}
    assert done == {name: (4, 0) for name in HOSTED}, {n: t.causes for n, t in tallies.items()}
    yield runs_dir(hosted_points) / HOSTED_RUN, fakes


def held_off_s(trace: dict[str, Any]) -> float:
    """How late the harness may have stamped what it received: its own measured lateness.

    A process held off the processor stamps late by as long as it was held; a hold longer than
    a 20 ms frame shows in the input lateness, a shorter one stays within :data:`ON_TIME_S`.
    """
    return float(trace["audit"]["lateness_max_ms"]) / 1000


def sent_on_time(
    arrival_s: float,
    began_s: float,
    returned_s: float,
    trace: dict[str, Any],
    on_time_s: float = ON_TIME_S,
) -> bool:
    """Whether the harness stamped at ``arrival_s`` what a fake sent, on time (stream clock).

    On time: no earlier than the fake began sending it (``began_s``) less ``on_time_s``, and no
    later than its write returned (``returned_s``) plus ``on_time_s`` and the harness's own
    :func:`held_off_s`. A fake held off the processor writes late: that delay is the fake's, not
    the harness's, so the bound counts from the write.
    """
    late_s = on_time_s + held_off_s(trace)
    return began_s - on_time_s <= arrival_s <= returned_s + late_s


def linked_points(source: Path, chosen: list[Point], work: Path) -> Path:
    """A working directory ``work`` holding ``chosen`` points of ``source`` (cuts linked)."""
    audio = work / "points" / "audio"
    audio.mkdir(parents=True)
    for point in chosen:
        (audio / point.point_id).symlink_to(source / "points" / "audio" / point.point_id)
    with io.atomic_open(work / "points" / MANIFEST_FILE) as handle:
        for point in chosen:
            handle.write(io.json_line(point.to_dict()))
    return work


def error_causes(run_dir: Path) -> dict[str, list[str]]:
    """The causes each system's failed rollouts recorded in their ``error.json``, by system."""
    found: dict[str, list[str]] = {}
    for path in run_dir.rglob("error.json"):
        record = json.loads(path.read_text())
        found.setdefault(record["system"], []).extend(record["attempts"])
    return found


def stream_live(
    adapter: SystemAdapter,
    clock: VirtualClock,
    audio: FloatArray,
    history: Sequence[dict[str, Any]] = (),
) -> list[SystemEvent]:
    """Stream ``audio`` live to an in-process adapter on ``clock`` (origin: the first sample)."""
    size = adapter.card.frame_samples
    padded = np.concatenate([audio, np.zeros(-len(audio) % size, dtype=np.float32)])
    frames = [padded[i : i + size].tobytes() for i in range(0, len(padded), size)]
    frame_ns = size * NS_PER_S // adapter.card.sample_rate

    async def send(_: int, frame: bytes) -> None:
        await adapter.send_frame(np.frombuffer(frame, dtype=np.float32))

    async def main() -> list[SystemEvent]:
        await adapter.connect()
        empty = np.zeros(0, dtype=np.float32)
        await adapter.preload(Preload("", empty, empty, list(history)))
        events: list[SystemEvent] = []

        async def collect() -> None:
            async for event in adapter.events():
                events.append(event)

        collector = asyncio.create_task(collect())
        await stream_frames(clock, frames, frame_ns, send, 0)
        await adapter.close()
        await collector
        return events

    return asyncio.run(main())
