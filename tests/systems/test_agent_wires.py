"""The ``twilio-media-streams`` and ``pipecat-websocket`` adapters against the fake agent.

One run per wire plays every point of :func:`hosted_points` to the fake agent
(:mod:`pmc.testing.agent`, Twilio's JSON and mu-law on one, Pipecat's protobuf frames read with
Pipecat's own ``frames_pb2`` on the other); the fake checks every message pmc sends and records,
on its own stream clock, when it heard each turn end, when its answers left and when it stopped
itself. pmc must play each answer where the fake sent it (within a 20 ms chunk, widened only by
the lateness the trace measured), stop the played track where the fake's ``clear`` (Pipecat's
``InterruptionFrame``) came, and turn each fault into a transport error that a resume retries.
"""

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from pmc.audio import SAMPLE_RATE
from pmc.harness import ProtocolParams, RunSettings, SystemTally, run_rollouts, runs_dir
from pmc.systems import load_card
from pmc.testing.agent import AgentBehaviour, FakeAgent, fake_agent
from pmc.testing.hosted import answer_audio
from pmc.testing.pipecat_bot import Wire
from tests.systems.conftest import card_at, error_causes, held_off_s, sent_on_time, traces

QUICK = ProtocolParams(reply_silence_s=0.5, no_reply_s=4.0)
CARDS = {Wire.TWILIO: "twilio-agent", Wire.PROTOBUF: "pipecat-agent"}
CLEARS = {Wire.TWILIO: "clear", Wire.PROTOBUF: "interruption"}
"""The ``detail.event`` of the signal that carries the agent's barge-in, per wire."""
ON_TIME_S = 0.025
"""pmc's onset of an answer and the fake's own record of it agree within this (a 20 ms chunk
and the loopback), plus the lateness the trace measured."""
SILENT = 1e-4
"""Peak amplitude below which the played track is silence (Piper's quietest speech is ~1e-2)."""


@dataclass
class Played:
    wire: Wire
    run_dir: Path
    tally: SystemTally
    agent: FakeAgent

    @property
    def card(self) -> str:
        return CARDS[self.wire]


@pytest.fixture(scope="module", params=list(Wire))
def played(
    request: pytest.FixtureRequest, hosted_points: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Played]:
    wire: Wire = request.param
    folder = tmp_path_factory.mktemp(f"{wire}-cards")
    run = f"agent-{wire}"
    with fake_agent(AgentBehaviour(), wire) as agent:
        card = load_card(card_at(CARDS[wire], agent.url, folder))
        tallies = run_rollouts(hosted_points, [card], RunSettings(run, retries=0, params=QUICK))
    yield Played(wire, runs_dir(hosted_points) / run, tallies[card.name], agent)


def first_audio_s(trace: dict[str, Any]) -> float | None:
    for output in trace["outputs"]:
        if output["kind"] == "audio" and output["samples"]:
            return float(output["arrival_ns"] - trace["t0_ns"]) / 1e9
    return None


def test_every_rollout_completes_and_pmc_speaks_the_wire_correctly(played: Played) -> None:
    assert (played.tally.done, played.tally.failed) == (4, 0)
    assert len(played.agent.calls) == 4
    echoed = 0
    for call in played.agent.calls:
        assert call.problems == [], call.problems
        assert call.chunks > 50  # 20 ms chunks: over a second of the call
        assert call.onsets_s, "the agent answered"
        if played.wire is Wire.TWILIO:
            assert call.stopped
            # a mark comes back once its answer has played: in order, never one not sent
            sent = [f"answer-{n}" for n in range(1, len(call.onsets_s) + 1)]
            assert call.marks_echoed == [name for name in sent if name in call.marks_echoed]
            echoed += len(call.marks_echoed)
    assert echoed >= (2 if played.wire is Wire.TWILIO else 0)


def test_an_answer_in_audio_alone_ends_a_turn_end_rollout_as_a_reply(played: Played) -> None:
    # Neither wire carries the agent's words: its speech after the turn end is its reply.
    found = traces(played.run_dir, played.card).values()
    ends = [t for t in found if t["protocol"]["kind"] != "pause"]
    assert len(ends) == 3
    assert {t["protocol"]["stop_reason"] for t in ends} == {"replied"}


def test_pmc_plays_each_answer_where_the_agent_sent_it(played: Played) -> None:
    """Each rollout against the call it was: the one whose stream began where the rollout's did.

    Both sides read one monotonic clock, so a call's origin and a trace's ``t0_ns`` compare
    directly (pairing by answer onsets, on each call's own stream clock, paired two rollouts
    held late on a loaded machine with one call).
    """
    calls = [call for call in played.agent.calls if call.origin_ns is not None]
    found = traces(played.run_dir, played.card)
    assert len(found) == 4
    matched = set()
    for point, trace in found.items():
        heard = first_audio_s(trace)
        assert heard is not None, point
        call = min(calls, key=lambda c: abs(int(c.origin_ns or 0) - int(trace["t0_ns"])))
        matched.add(call.call)
        sent = (call.onsets_s[0], call.onsets_sent_s[0])
        on_time = sent_on_time(heard, *sent, trace, ON_TIME_S)
        assert on_time, (point, heard, sent, held_off_s(trace))
    assert len(matched) == 4  # one rollout to each call


def test_barge_in_stops_the_played_track_where_the_agent_said(played: Played) -> None:
    """At the pause point the speaker resumes over the agent's answer: the agent stops itself."""
    found = [
        (point, t)
        for point, t in traces(played.run_dir, played.card).items()
        if t["protocol"]["kind"] == "pause"
    ]
    assert len(found) == 1
    point, trace = found[0]
    interrupted = [o for o in trace["outputs"] if o["kind"] == "interrupted"]
    clears = [o for o in trace["outputs"] if o["detail"].get("event") == CLEARS[played.wire]]
    assert len(clears) == 1 and len(interrupted) == 1
    assert interrupted[0]["arrival_ns"] == clears[0]["arrival_ns"]
    assert interrupted[0]["detail"]["unplayed_ms"] > 0  # some of it was still to play
    cleared = [call for call in played.agent.calls if call.clears_s]
    assert len(cleared) == 1
    at_s = (clears[0]["arrival_ns"] - trace["t0_ns"]) / 1e9
    clear = (cleared[0].clears_s[0], cleared[0].clears_sent_s[0])
    assert sent_on_time(at_s, *clear, trace, ON_TIME_S), (at_s, clear, held_off_s(trace))
    # The played track: the answer sounds up to the clear and is silent after it, until the
    # agent's next answer (to the turn the speaker went on to finish) if it began one.
    track, rate = sf.read(played.run_dir / "rollouts" / played.card / point / "0" / "played.flac")
    # pmc cuts the track at its own stamp of the clear, and stamps audio never earlier than the
    # agent sent it: the silence holds from the clear to the agent's next answer, within the
    # stamps' own uncertainty, however late pmc read either (a rollout held off 1.9 s once left
    # no gap between margins that counted its lateness too).
    later = [t for t in cleared[0].onsets_s if t > cleared[0].clears_s[0]]
    at, margin = round(at_s * rate), round(ON_TIME_S * rate)
    until = round(later[0] * rate) - margin if later else len(track)
    # What played of it, from where pmc stamped its first audio (the answer starts sharply) to
    # the clear. On a loaded machine the agent answers later in the pause, so little of it may
    # play before the speaker resumes: two fresh runs had 100 ms and less than the margin.
    audio = [o["arrival_ns"] for o in trace["outputs"] if o["kind"] == "audio"]
    onset = round((min(audio) - trace["t0_ns"]) / 1e9 * rate)
    assert onset < at, "no audio of the answer came before the clear"
    if at - onset > ON_TIME_S * rate:  # longer than the stamps' own uncertainty
        loudest = np.abs(track[onset:at]).max()
        assert loudest > 100 * SILENT, ("the answer was silent", (at - onset) / rate)
    # cut, not finished: what pmc played of it, from its own stamp, is shorter than the whole
    # answer (how much shorter depends on when the agent answered in the pause, which a loaded
    # machine moves: one fresh run played 2.47 s of 2.44 from the agent's own onset)
    answer_s = len(answer_audio(AgentBehaviour().reply_text)) / SAMPLE_RATE
    assert (at - onset) / rate < answer_s, ((at - onset) / rate, answer_s)
    # At least five 20 ms chunks of silence to check.
    assert until - (at + margin) > rate // 10, "too short a gap to tell"
    assert np.abs(track[at + margin : until]).max() < SILENT, "the cut answer sounds on"


FAULTS = {
    "refused": (AgentBehaviour(refuse=True), "cannot connect to ws://127.0.0.1:"),
    "stalled": (AgentBehaviour(stall_s=3.0), "handshake timed out after 1 s"),
    "close-mid-call": (AgentBehaviour(close_after=30), "connection lost"),
    "malformed": (AgentBehaviour(malformed_after=30), "malformed"),
    "unknown": (AgentBehaviour(unknown_after=30), ""),
}
"""Each fault (on the first call only) and what its error must say ("": none, it is kept)."""
MALFORMED = {
    Wire.TWILIO: "malformed JSON from the agent",
    Wire.PROTOBUF: "malformed frame from the bot (field 2 runs past the message)",
}
UNKNOWN = {Wire.TWILIO: "transcript", Wire.PROTOBUF: "frame 9"}
"""How each wire's unknown message is named in the trace."""


@dataclass
class Faulted:
    first: dict[str, SystemTally]
    first_causes: dict[str, list[str]]
    second: dict[str, SystemTally]
    run_dir: Path


@pytest.fixture(scope="module")
def faulted(hosted_points: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Faulted]:
    """Every fault on each wire, one card each, all in one run; then the run resumed."""
    folder = tmp_path_factory.mktemp("agent-fault-cards")
    settings = RunSettings("agent-faults", retries=0, params=QUICK)
    with ExitStack() as stack:
        agents = []
        cards = []
        for wire in Wire:
            for label, (behaviour, _) in FAULTS.items():
                faulty = AgentBehaviour(**{**behaviour.__dict__, "fault_sessions": 1})
                agent = stack.enter_context(fake_agent(faulty, wire))
                agents.append(agent)
                path = card_at(
                    CARDS[wire],
                    agent.url,
                    folder,
                    f"{wire}-{label}",
                    point_kinds=["turn_end"],
                    preload_timeout_s=1.0,
                )
                cards.append(load_card(path))
        first = run_rollouts(hosted_points, cards, settings)
        run_dir = runs_dir(hosted_points) / "agent-faults"
        first_causes = error_causes(run_dir)
        for agent in agents:
            agent.behaviour = AgentBehaviour()
        second = run_rollouts(hosted_points, cards, settings)
    yield Faulted(first, first_causes, second, run_dir)


@pytest.mark.parametrize("wire", list(Wire))
@pytest.mark.parametrize("label", sorted(FAULTS))
def test_a_fault_is_a_transport_error_with_its_cause_and_is_retried(
    faulted: Faulted, wire: Wire, label: str
) -> None:
    name = f"{wire}-{label}"
    cause = MALFORMED[wire] if label == "malformed" else FAULTS[label][1]
    first, second = faulted.first[name], faulted.second[name]
    if not cause:  # an unknown message is kept in the trace and counted, never fatal
        assert (first.done, first.failed) == (2, 0)
        assert name not in faulted.first_causes
        kept = [
            o["detail"]
            for trace in traces(faulted.run_dir, name).values()
            for o in trace["outputs"]
            if o["detail"].get("type") == "pmc.unknown"
        ]
        assert len(kept) == 1 and kept[0]["event"] == UNKNOWN[wire]
        assert first.unknown == {f"event {UNKNOWN[wire]}": 1}
        return
    assert (first.done, first.failed) == (1, 1)
    recorded = faulted.first_causes[name]
    assert len(recorded) == 1
    assert cause in recorded[0], recorded
    if label != "stalled":  # the harness's own limit, not the adapter, names the timeout
        assert recorded[0].startswith(f"transport: system card {name}: "), recorded
    assert (second.done, second.kept, second.failed) == (1, 1, 0)
