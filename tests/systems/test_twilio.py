"""The ``twilio-media-streams`` adapter against the fake phone agent, through the harness.

One run plays every point of :func:`hosted_points` to the agent; the fake checks every message
pmc sends and records, on its own stream clock, when it heard each turn end and when its answers
left. pmc must play each answer where the fake sent it (within a 20 ms mu-law chunk, widened only
by the lateness the trace measured), stop playing where the fake's ``clear`` came (barge-in at
the pause point), and turn each fault into a transport error that a resume retries.
"""

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pmc.harness import ProtocolParams, RunSettings, SystemTally, run_rollouts, runs_dir
from pmc.systems import load_card
from pmc.testing.twilio import AgentBehaviour, FakeAgent, fake_agent
from tests.systems.conftest import card_at, error_causes, held_off_s, traces

QUICK = ProtocolParams(reply_silence_s=0.5, no_reply_s=4.0)
CARD = "twilio-agent"
ON_TIME_S = 0.025
"""pmc's onset of an answer and the fake's own record of it agree within this (a 20 ms chunk
and the loopback), plus the lateness the trace measured."""


@dataclass
class Played:
    run_dir: Path
    tally: SystemTally
    agent: FakeAgent


@pytest.fixture(scope="module")
def played(hosted_points: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Played]:
    folder = tmp_path_factory.mktemp("twilio-cards")
    with fake_agent(AgentBehaviour()) as agent:
        card = load_card(card_at(CARD, agent.url, folder))
        tallies = run_rollouts(
            hosted_points, [card], RunSettings("twilio", retries=0, params=QUICK)
        )
    yield Played(runs_dir(hosted_points) / "twilio", tallies[CARD], agent)


def first_audio_s(trace: dict[str, Any]) -> float | None:
    for output in trace["outputs"]:
        if output["kind"] == "audio" and output["samples"]:
            return float(output["arrival_ns"] - trace["t0_ns"]) / 1e9
    return None


def test_every_rollout_completes_and_pmc_speaks_twilio_correctly(played: Played) -> None:
    assert (played.tally.done, played.tally.failed) == (4, 0)
    assert len(played.agent.calls) == 4
    for call in played.agent.calls:
        assert call.problems == [], call.problems
        assert call.chunks > 50  # 20 ms chunks: over a second of the call
        assert call.stopped
        assert call.onsets_s, "the agent answered"


def test_an_answer_in_audio_alone_ends_a_turn_end_rollout_as_a_reply(played: Played) -> None:
    # A phone line carries no text: the agent's speech after the turn end is its reply.
    ends = [t for t in traces(played.run_dir, CARD).values() if t["protocol"]["kind"] != "pause"]
    assert len(ends) == 3
    assert {t["protocol"]["stop_reason"] for t in ends} == {"replied"}


def test_pmc_plays_each_answer_where_the_agent_sent_it(played: Played) -> None:
    onsets = {call.call: call.onsets_s[0] for call in played.agent.calls}
    found = traces(played.run_dir, CARD)
    assert len(found) == 4
    matched = set()
    for point, trace in found.items():
        heard = first_audio_s(trace)
        assert heard is not None, point
        call, sent = min(onsets.items(), key=lambda item: abs(item[1] - heard))
        matched.add(call)
        assert abs(heard - sent) <= ON_TIME_S + held_off_s(trace), (point, heard, sent)
    assert len(matched) == 4


def test_barge_in_clears_playback_where_the_agent_said(played: Played) -> None:
    pauses = [t for t in traces(played.run_dir, CARD).values() if t["protocol"]["kind"] == "pause"]
    assert len(pauses) == 1
    trace = pauses[0]
    interrupted = [o for o in trace["outputs"] if o["kind"] == "interrupted"]
    clears = [o for o in trace["outputs"] if o["detail"].get("event") == "clear"]
    assert len(clears) == 1 and len(interrupted) == 1
    assert interrupted[0]["arrival_ns"] == clears[0]["arrival_ns"]
    assert interrupted[0]["detail"]["unplayed_ms"] > 100  # the answer was cut, not finished
    cleared = [call for call in played.agent.calls if call.clears_s]
    assert len(cleared) == 1
    at_s = (clears[0]["arrival_ns"] - trace["t0_ns"]) / 1e9
    assert abs(at_s - cleared[0].clears_s[0]) <= ON_TIME_S + held_off_s(trace)
    # Nothing of the cut answer is placed after the clear: the played track is silent there.
    no_audio_after = [
        o
        for o in trace["outputs"]
        if o["kind"] == "audio" and o["arrival_ns"] > clears[0]["arrival_ns"]
    ]
    assert no_audio_after == [] or cleared[0].onsets_s[1:], "audio after clear is a new answer"


FAULTS = {
    "refused": (AgentBehaviour(refuse=True, fault_sessions=1), "cannot connect to ws://127.0.0.1:"),
    "close-mid-call": (AgentBehaviour(close_after=30, fault_sessions=1), "connection lost"),
    "malformed": (
        AgentBehaviour(malformed_after=30, fault_sessions=1),
        "malformed JSON from the agent",
    ),
    "unknown-event": (AgentBehaviour(unknown_after=30, fault_sessions=1), ""),
}


@dataclass
class Faulted:
    first: dict[str, SystemTally]
    first_causes: dict[str, list[str]]
    second: dict[str, SystemTally]
    run_dir: Path


@pytest.fixture(scope="module")
def faulted(hosted_points: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Faulted]:
    folder = tmp_path_factory.mktemp("twilio-fault-cards")
    settings = RunSettings("twilio-faults", retries=0, params=QUICK)
    with ExitStack() as stack:
        agents = {}
        cards = []
        for label, (behaviour, _) in FAULTS.items():
            agents[label] = stack.enter_context(fake_agent(behaviour))
            path = card_at(CARD, agents[label].url, folder, label, point_kinds=["turn_end"])
            cards.append(load_card(path))
        first = run_rollouts(hosted_points, cards, settings)
        run_dir = runs_dir(hosted_points) / "twilio-faults"
        first_causes = error_causes(run_dir)
        for agent in agents.values():
            agent.behaviour = AgentBehaviour()
        second = run_rollouts(hosted_points, cards, settings)
    yield Faulted(first, first_causes, second, run_dir)


@pytest.mark.parametrize("label", sorted(FAULTS))
def test_a_fault_is_a_transport_error_with_its_cause_and_is_retried(
    faulted: Faulted, label: str
) -> None:
    cause = FAULTS[label][1]
    first, second = faulted.first[label], faulted.second[label]
    if not cause:  # an unknown event is kept in the trace and counted, never fatal
        assert (first.done, first.failed) == (2, 0)
        assert label not in faulted.first_causes
        kept = [
            o["detail"]
            for trace in traces(faulted.run_dir, label).values()
            for o in trace["outputs"]
            if o["detail"].get("type") == "pmc.unknown"
        ]
        assert len(kept) == 1 and kept[0]["event"]
        assert first.unknown == {f"event {kept[0]['event']}": 1}
        return
    assert (first.done, first.failed) == (1, 1)
    recorded = faulted.first_causes[label]
    assert len(recorded) == 1
    assert recorded[0].startswith(f"transport: system card {label}: "), recorded
    assert cause in recorded[0], recorded
    assert (second.done, second.kept, second.failed) == (1, 1, 0)
