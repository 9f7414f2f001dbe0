"""Talk-over points on a voice agent, over Twilio Media Streams and Pipecat's protobuf frames.

The fake agent (:mod:`pmc.testing.agent`) answers each turn end and, told to, stops its answer
250 ms after the caller's speech over it began, with a ``clear`` (Twilio) or an
``InterruptionFrame`` (Pipecat); it records, on its stream clock, where that speech began and
when it stopped. pmc plays the person's clip over the agent's answer, stops its playback there,
and scores the stop latency.

Both sides read one monotonic clock, so the agent's instants are put on the harness's stream
clock exactly; what pmc measured must be the agent's own stop latency plus what lay between
them on this rollout (how late the agent heard the clip, how late its ``clear`` was stamped),
within 3 ms. Marked ``waiting`` (tests/conftest.py): it streams on the real clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from pmc.points import Point
from pmc.testing.agent import AgentBehaviour, FakeAgent, fake_agent
from pmc.testing.pipecat_bot import Wire
from pmc.testing.points import write_talk_over_points
from tests.harness.test_talk_over_run import (
    _landed,
    _measured_is_own,
    _pmc,
    _protocol,
    _quiet_at_cut_s,
    _scores,
    _trace,
)
from tests.systems.conftest import card_at

pytestmark = pytest.mark.slow

YIELD_MS = 250.0
FRAME_S = 0.02
"""The agent cards' input frames (20 ms, as a phone call's)."""
CARDS = {Wire.TWILIO: "twilio-agent", Wire.PROTOBUF: "pipecat-agent"}


@dataclass(frozen=True)
class AgentRun:
    folder: Path
    points: dict[str, Point]
    agent: FakeAgent
    card: str


@pytest.fixture(scope="module", params=list(CARDS), ids=str)
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> AgentRun:
    wire: Wire = request.param
    workdir = tmp_path_factory.mktemp(f"talk-over-agent-{wire}")
    points = {p.point_id: p for p in write_talk_over_points(workdir)}
    # Answers 1.2 s after a turn ends: the answer to the clip comes more than the 1 s of quiet
    # a yield needs after the stop.
    behaviour = AgentBehaviour(latency_ms=1200.0, yield_ms=YIELD_MS)
    with fake_agent(behaviour, wire) as agent:
        card = card_at(CARDS[wire], agent.url, workdir / "cards")
        _pmc("run", "--workdir", workdir, "--run-id", "a", "--clock", "real", "--system", card)
    folder = workdir / "runs" / "a"
    _pmc("score", "--run", folder, "--asr", "faster-whisper:tiny.en", "--workers", "1")
    return AgentRun(folder, points, agent, CARDS[wire])


def test_the_agent_clears_where_it_said_and_pmc_measures_its_own_stop_latency(
    run: AgentRun,
) -> None:
    scores = _scores(run.folder, run.card)
    assert set(scores) == set(run.points)
    calls = [c for c in run.agent.calls if c.heard_s]
    assert len(calls) == len(run.points)
    for point in run.points.values():
        trace = _trace(run.folder, run.card, point)
        protocol = _protocol(run.folder, run.card, point)
        clip_at = protocol.clip_stream_s
        assert clip_at is not None and protocol.listen_stream_s is None  # it always hears
        _landed(trace, point, FRAME_S)
        (call,) = [
            c
            for c in calls
            if c.origin_ns is not None and abs(c.origin_ns - trace["t0_ns"]) < 50_000_000
        ]
        assert call.origin_ns is not None
        offset_s = (call.origin_ns - trace["t0_ns"]) / 1e9  # agent clock -> harness's
        heard = call.heard_s[0] + offset_s
        cleared = call.clears_s[0] + offset_s
        stop = next(o for o in trace["outputs"] if o["kind"] == "interrupted")
        stop_at = (stop["arrival_ns"] - trace["t0_ns"]) / 1e9
        late_s = trace["audit"]["lateness_max_ms"] / 1000
        clip = scores[point.point_id].clip
        # Over Twilio the clip reaches the agent resampled to 8 kHz mu-law: a filter rings a few
        # ms ahead.
        quiet = _quiet_at_cut_s(run.folder / "rollouts" / run.card / point.point_id / "0", stop_at)
        least = YIELD_MS / 1000
        _measured_is_own(clip, clip_at, heard, cleared, stop_at, late_s, least, 0.005, quiet)
        assert clip is not None and clip.yielded
