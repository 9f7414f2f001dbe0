"""The limits a run observes: sessions at once (overall and per card) and handshake time.

Concurrency is counted by a fake that holds every session it is given until every rollout in
flight is holding one (:class:`pmc.testing.systems.SessionGate`), so the limits are reached
at once and any excess shows, released by progress alone. Handshake limits are shortened per
card (or their module default is, while another assertion pins the default) and tested
against fakes that stall on the same event loop for longer than the limit, so which comes
first is known on any machine.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pmc import io
from pmc.cli import cli
from pmc.clock import RealClock, VirtualClock
from pmc.harness import (
    ERROR_FILE,
    ClockKind,
    ProtocolParams,
    RolloutJob,
    RunSettings,
    _rollout,
    _stage,
    live_for,
    preload_for,
    run_rollout,
    run_rollouts,
    runs_dir,
)
from pmc.points import Point, points_dir, read_points
from pmc.systems import Family, SystemCard, TransportError, bundled_cards, create_adapter, find_card
from pmc.systems._hosted import _session
from pmc.testing.hosted import Dialect, FakeBehaviour, OpenAIFakeSession, serve_fake
from pmc.testing.points import write_points
from pmc.testing.systems import GatedSystem, SessionGate, StalledSystem

SYSTEMS = bundled_cards()
LIMIT_S = 0.05
"""A handshake limit short enough to cost the suite nothing."""
STALL_S = 0.25
"""A hosted fake's stall: five times the limit, on the same event loop as the client's timer,
so the limit always ends the handshake first; a test whose limit is not enforced sees the
handshake finish instead."""
KEY = "sk-test-limits"
PARAMS = ProtocolParams()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("limits-work")
    write_points(path)
    return path


@pytest.fixture(scope="module")
def point(workdir: Path) -> Point:
    return read_points(workdir)[0]


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[SessionGate]:
    """A gate for ``gated`` cards, told of each rollout entering and leaving the limited part."""
    gate = SessionGate()
    monkeypatch.setattr(GatedSystem, "gate", gate)
    real = _stage._run_task

    async def tracked(*args: Any, **kwargs: Any) -> None:
        gate.entered()
        try:
            await real(*args, **kwargs)
        finally:
            gate.left()

    # The one function the run's semaphores guard: entering it is holding a slot.
    monkeypatch.setattr(_stage, "_run_task", tracked)
    yield gate


def gated_card(folder: Path, name: str, concurrency: int) -> Path:
    path = folder / f"{name}.toml"
    path.write_text(
        f'adapter = "gated"\nfamily = "local"\nconcurrency = {concurrency}\n', encoding="utf-8"
    )
    return path


def failures(run: Path) -> list[str]:
    return [cause for p in run.rglob(ERROR_FILE) for cause in io.read_json(p)["attempts"]]


def test_pmc_run_concurrency_caps_sessions_over_all_systems_and_is_reached(
    workdir: Path, tmp_path: Path, gate: SessionGate
) -> None:
    # Two cards of 2 sessions each under an overall limit of 3: the overall limit binds.
    cards = [gated_card(tmp_path, name, 2) for name in ("gated-a", "gated-b")]
    args = ["run", "--workdir", str(workdir), "--run-id", "overall", "--clock", "real"]
    args += ["--concurrency", "3", "--rollouts", "3", "--retries", "0"]
    for card in cards:
        args += ["--system", str(card)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    total = 2 * 4 * 3
    assert len(failures(runs_dir(workdir) / "overall")) == total  # every rollout ran once
    assert sum(gate.waves) == total
    assert gate.waves[0] == 3  # the limit is reached at once, with cards to spare
    assert gate.most_total == 3  # and never passed
    assert max(gate.most.values()) <= 2
    assert sum(gate.open.values()) == 0  # every session was closed


def test_each_card_caps_its_own_sessions_and_reaches_its_cap(
    workdir: Path, gate: SessionGate
) -> None:
    cards = [
        SystemCard("two-at-once", "gated", Family.LOCAL, concurrency=2),
        SystemCard("three-at-once", "gated", Family.LOCAL, concurrency=3),
    ]
    settings = RunSettings("per-card", rollouts=3, concurrency=16, retries=0, clock=ClockKind.REAL)
    tallies = run_rollouts(workdir, cards, settings)
    assert {n: t.failed for n, t in tallies.items()} == {c.name: 12 for c in cards}
    assert gate.waves[0] == 5
    assert dict(gate.most) == {"two-at-once": 2, "three-at-once": 3}
    assert gate.most_total == 5
    assert sum(gate.open.values()) == 0


def test_a_session_refused_mid_handshake_is_closed(workdir: Path, gate: SessionGate) -> None:
    card = SystemCard("refused", "gated", Family.LOCAL, params={"point_kinds": ["pause"]})
    tallies = run_rollouts(workdir, [card], RunSettings("refused", retries=0))
    assert (tallies["refused"].failed, gate.waves, gate.most_total) == (1, [1], 1)
    assert gate.open["refused"] == 0


# -- the connect-and-preload limit (the harness's) --------------------------------------------


def job(workdir: Path, point: Point, card: SystemCard) -> RolloutJob:
    pdir = points_dir(workdir)
    return RolloutJob(point, card, 0, 0, live_for(pdir, point), preload_for(pdir, point, 0))


def test_the_connect_and_preload_limit_is_60_s_by_default() -> None:
    assert _rollout.HANDSHAKE_TIMEOUT_S == 60.0


@pytest.mark.parametrize("where", ["connect", "preload"])
def test_a_stalled_handshake_ends_at_the_cards_limit_closed_and_recorded(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    monkeypatch.setattr(StalledSystem, "closed", 0)
    params = {"stall": where, "preload_timeout_s": LIMIT_S, "point_kinds": ["pause"]}
    card = SystemCard(f"stalled-{where}", "stalled", Family.LOCAL, params=params)
    tallies = run_rollouts(workdir, [card], RunSettings(f"stall-{where}", retries=0))
    assert tallies[card.name].failed == 1
    cause = f"transport: handshake timed out after {LIMIT_S:g} s"
    assert failures(runs_dir(workdir) / f"stall-{where}") == [cause]
    assert StalledSystem.closed == 1


def test_a_card_without_a_limit_gets_the_default(
    workdir: Path, point: Point, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_rollout, "HANDSHAKE_TIMEOUT_S", LIMIT_S)
    card = SystemCard("stalled", "stalled", Family.LOCAL, params={"stall": "preload"})
    clock = VirtualClock()
    with pytest.raises(TransportError, match=f"handshake timed out after {LIMIT_S:g} s"):
        asyncio.run(
            run_rollout(job(workdir, point, card), create_adapter(card, clock), clock, PARAMS)
        )


# -- the hosted session's handshake limit (each of its two steps) ------------------------------


def test_the_hosted_handshake_limit_is_10_s_by_default() -> None:
    assert _session.HANDSHAKE_TIMEOUT_S == 10.0


def hosted_card(url: str, **params: Any) -> SystemCard:
    card = find_card("gpt-realtime-300", SYSTEMS)
    return replace(card, endpoint=url, params={**card.params, **params})


class SlowToAcknowledge(OpenAIFakeSession):
    """Acknowledges the session settings :data:`STALL_S` late."""

    async def on_session_update(self, message: dict[str, Any]) -> None:
        await asyncio.sleep(STALL_S)
        await super().on_session_update(message)


@dataclass(frozen=True)
class Failed:
    """How a hosted rollout failed: its cause, what the fake received, if it was closed."""

    cause: str
    received: list[str]
    closed: bool


async def hosted_rollout(
    workdir: Path,
    point: Point,
    monkeypatch: pytest.MonkeyPatch,
    factory: type[OpenAIFakeSession],
    behaviour: FakeBehaviour,
    **params: Any,
) -> Failed:
    """One rollout of a GPT card against a fake on this event loop; it must fail."""
    async with serve_fake(factory, behaviour, auth_header=Dialect.OPENAI.auth_header) as fake:
        card = hosted_card(fake.url, **params)
        clock = RealClock()
        adapter = create_adapter(card, clock)
        closed: list[bool] = []
        real_close = adapter.close

        async def close() -> None:
            closed.append(True)
            await real_close()

        monkeypatch.setattr(adapter, "close", close)
        with pytest.raises(TransportError) as failed:
            await run_rollout(job(workdir, point, card), adapter, clock, PARAMS)
        received = [r for s in fake.sessions for r in s.received]
    return Failed(str(failed.value), received, bool(closed))


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def test_a_hosted_socket_that_does_not_open_ends_at_the_default_limit(
    workdir: Path, point: Point, monkeypatch: pytest.MonkeyPatch, key: None
) -> None:
    monkeypatch.setattr(_session, "HANDSHAKE_TIMEOUT_S", LIMIT_S)
    slow = FakeBehaviour(handshake_delay_s=STALL_S)
    failed = asyncio.run(hosted_rollout(workdir, point, monkeypatch, OpenAIFakeSession, slow))
    assert failed.cause.endswith(f"handshake timed out after {LIMIT_S:g} s"), failed.cause
    assert failed.received == []
    assert failed.closed


def test_hosted_settings_not_acknowledged_end_at_the_cards_limit_and_the_socket_closes(
    workdir: Path, point: Point, monkeypatch: pytest.MonkeyPatch, key: None
) -> None:
    failed = asyncio.run(
        hosted_rollout(
            workdir,
            point,
            monkeypatch,
            SlowToAcknowledge,
            FakeBehaviour(),
            handshake_timeout_s=LIMIT_S,
        )
    )
    if failed.received:  # the socket opened in time: the acknowledgement is what timed out
        expected = f"the session settings were not acknowledged within {LIMIT_S:g} s"
    else:  # a machine too busy to open a loopback socket in time: the same limit ended it
        expected = f"handshake timed out after {LIMIT_S:g} s"
    assert failed.cause.endswith(expected), failed.cause
    assert failed.closed  # the open socket is not left behind
    assert KEY not in failed.cause
