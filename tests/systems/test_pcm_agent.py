"""A voice agent on the raw-PCM wire (the bundled ``pcm-agent`` card), at the demo's turn ends.

The agent is :mod:`pmc.testing.loopback`'s fake in a process of its own: it answers "Okay, sure
thing." 300 ms after it has heard 500 ms of silence, at every end of speech, so also at pauses
inside the live turn, and by the rollout's boundary it has often said the phrase twice already.
Its wire carries audio and JSON signals, no words. Issue 38: every reply is counted. Each
rollout stops ``replied`` (once the agent's speech has been followed by the reply silence, not
at the no-reply limit), and each reply after the boundary has its words, however often the
phrase was said before it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from pmc.harness import ClockKind, RunSettings, run_rollouts, runs_dir
from pmc.points import Point, PointKind, read_points
from pmc.scoring import Score, ScoreSettings, ScoreStatus, read_scores, run_scoring
from pmc.systems import bundled_cards, load_card
from pmc.testing.loopback import LoopbackBehaviour, fake_system_process
from tests.systems.conftest import linked_points, traces

pytestmark = pytest.mark.slow

AGENT = LoopbackBehaviour(latency_ms=800.0, silence_ms=500.0, reply_text="Okay, sure thing.")
"""500 ms of silence to endpoint, then 300 ms to the first sample of the answer."""
CONCURRENCY = 15
"""Sessions at once: the fake serves any number, and 30 real-time rollouts one by one would
take five minutes; two rounds of 15 take under a minute, and mostly wait."""


@dataclass(frozen=True)
class Agent:
    run: Path
    points: dict[str, Point]
    scores: dict[str, Score]


@pytest.fixture(scope="module")
def agent(demo_points_workdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Agent:
    """The agent at every demo turn end, on the real clock, scored as a run is."""
    ends = [p for p in read_points(demo_points_workdir) if p.kind is PointKind.TURN_END]
    work = tmp_path_factory.mktemp("pcm-agent")
    workdir = linked_points(demo_points_workdir, ends, work / "w")
    text = (bundled_cards() / "pcm-agent.toml").read_text()
    text = re.sub(r"(?m)^concurrency = .*$", f"concurrency = {CONCURRENCY}", text)
    with fake_system_process(AGENT) as url:
        card_path = work / "pcm-agent.toml"
        card_path.write_text(re.sub(r'(?m)^endpoint = ".*"$', f'endpoint = "{url}"', text))
        settings = RunSettings("agent", clock=ClockKind.REAL, retries=0)
        tallies = run_rollouts(workdir, [load_card(card_path)], settings)
    assert (tallies["pcm-agent"].done, tallies["pcm-agent"].failed) == (len(ends), 0)
    run = runs_dir(workdir) / "agent"
    # tiny.en, as the suite's other runs are scored: the words only need finding (Whisper base,
    # the default, is tested in tests/scoring/test_transcription.py and by the demo's slice).
    run_scoring(run, ScoreSettings(asr="faster-whisper:tiny.en"), workers=2)
    scores = {s.point_id: s for s in read_scores(run, "pcm-agent")}
    return Agent(run, {p.point_id: p for p in ends}, scores)


def test_the_card_is_bundled_and_its_wire_carries_no_words() -> None:
    card = load_card(bundled_cards() / "pcm-agent.toml")
    assert (card.adapter, card.family.value, card.endpoint) == (
        "loopback-pcm",
        "duplex",
        "ws://127.0.0.1:8766/",
    )


def test_every_rollout_stops_as_replied(agent: Agent) -> None:
    found = traces(agent.run, "pcm-agent")
    assert len(found) == len(agent.points) == 30
    stops = {point_id: trace["protocol"]["stop_reason"] for point_id, trace in found.items()}
    assert set(stops.values()) == {"replied"}, stops


def test_every_reply_is_counted_with_its_words(agent: Agent) -> None:
    assert len(agent.scores) == 30
    missing = []
    for point_id, score in agent.scores.items():
        reply = score.reply
        if score.status is not ScoreStatus.SCORED or reply is None or not reply.words:
            missing.append((point_id, score.status, reply))
            continue
        # The answer to the turn's end starts at least 500 ms after it (an answer to a pause
        # just before may still be playing then, and is counted with it).
        boundary = agent.points[point_id].boundary_stream_s
        late = [w.text for e in score.evidence for w in e.words if w.start_s > boundary + 0.3]
        assert "sure" in " ".join(late).lower(), (point_id, reply.transcript)
    assert missing == []
