"""An agent written for voicebench's websocket, at talk-over points, through the bundled card.

The fake (:mod:`pmc.testing.voicebench`, a process of its own) takes voicebench's ``start``,
answers each turn end with its transcripts and then its speech in real-time 20 ms messages, and
when the person's clip comes over its answer stops and sends ``clear``. pmc must open with
``start`` at the card's rate, keep the agent's transcript as its words, and record each
``clear`` as an interruption stamped when it came, cutting what had not yet played. Marked
``waiting`` (tests/conftest.py): it streams on the real clock.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pmc.clock import RealClock
from pmc.points import Point
from pmc.systems import EventKind, WebsocketAdapter, bundled_cards, create_adapter, find_card
from pmc.testing.points import write_talk_over_points
from pmc.testing.voicebench import AgentBehaviour, VoicebenchProcess, voicebench_process
from tests.harness.test_talk_over_run import _pmc, _scores, _trace
from tests.systems.conftest import card_at, sent_on_time

pytestmark = pytest.mark.slow

CARD = "voicebench-agent"
BEHAVIOUR = AgentBehaviour(latency_ms=900.0, silence_ms=500.0, barge_in_ms=120.0)


@dataclass(frozen=True)
class Run:
    folder: Path
    points: dict[str, Point]
    agent: VoicebenchProcess


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    workdir = tmp_path_factory.mktemp("voicebench")
    points = {p.point_id: p for p in write_talk_over_points(workdir)}
    with voicebench_process(BEHAVIOUR) as agent:
        card = card_at(CARD, agent.url, workdir / "cards")
        _pmc("run", "--workdir", workdir, "--run-id", "v", "--clock", "real", "--system", card)
    folder = workdir / "runs" / "v"
    _pmc("score", "--run", folder, "--asr", "faster-whisper:tiny.en", "--workers", "1")
    return Run(folder, points, agent)


def _stream_s(trace: dict[str, Any], ns: int) -> float:
    """A monotonic instant (both processes read one clock) on the trace's stream clock."""
    return (ns - int(trace["t0_ns"])) / 1e9


def _session_of(run: Run, trace: dict[str, Any]) -> Any:
    """The agent's session whose first answer went out during this rollout."""
    t0 = int(trace["t0_ns"])
    end = t0 + round(float(trace["protocol"]["stop_stream_s"]) * 1e9)
    (session,) = [
        s for s in run.agent.sessions if s.onsets_sent_ns and t0 < s.onsets_sent_ns[0] < end
    ]
    return session


def test_every_session_opens_with_start_at_the_cards_rate(run: Run) -> None:
    assert len(run.agent.sessions) == len(run.points) == 2
    for session in run.agent.sessions:
        assert session.start == {"type": "start", "sample_rate": 16000}
        assert session.frames > 0 and session.other_text == []


def test_the_agents_transcript_is_its_words_and_the_users_a_signal(run: Run) -> None:
    for point in run.points.values():
        trace = _trace(run.folder, CARD, point)
        texts = [o["text"] for o in trace["outputs"] if o["kind"] == "text"]
        assert texts and set(texts) == {BEHAVIOUR.reply_text}, texts
        roles = [
            o["detail"].get("role")
            for o in trace["outputs"]
            if o["kind"] == "signal" and o["detail"].get("type") == "transcript"
        ]
        assert roles.count("user") == roles.count("agent") >= 1


def test_a_clear_is_an_interruption_stamped_when_it_came(run: Run) -> None:
    scores = _scores(run.folder, CARD)
    for point in run.points.values():
        trace = _trace(run.folder, CARD, point)
        session = _session_of(run, trace)
        assert len(session.clears_sent_ns) >= 1, point.point_id  # the clip came over its answer
        stops = [o for o in trace["outputs"] if o["kind"] == "interrupted"]
        assert stops and stops[0]["detail"]["reason"] == "clear"
        assert stops[0]["detail"]["unplayed_ms"] > 0
        arrival = _stream_s(trace, int(stops[0]["arrival_ns"]))
        began = _stream_s(trace, session.clears_began_ns[0])
        returned = _stream_s(trace, session.clears_sent_ns[0])
        assert sent_on_time(arrival, began, returned, trace), (arrival, began, returned)
        assert scores[point.point_id].clip is not None  # scored as a talk-over point


def test_the_reply_starts_where_its_first_message_came(run: Run) -> None:
    for point in run.points.values():
        trace = _trace(run.folder, CARD, point)
        session = _session_of(run, trace)
        first = next(o for o in trace["outputs"] if o["kind"] == "audio" and o["samples"])
        arrival = _stream_s(trace, int(first["arrival_ns"]))
        began = _stream_s(trace, session.onsets_began_ns[0])
        returned = _stream_s(trace, session.onsets_sent_ns[0])
        assert sent_on_time(arrival, began, returned, trace), (arrival, began, returned)


def test_unknown_text_is_kept_and_a_clear_with_nothing_playing_is_a_signal() -> None:
    adapter = create_adapter(find_card(CARD, bundled_cards()), RealClock())
    assert isinstance(adapter, WebsocketAdapter)
    unknown = adapter.decode(5, json.dumps({"type": "metrics", "ttfb_ms": 312}))
    assert [e.kind for e in unknown] == [EventKind.SIGNAL]
    assert unknown[0].detail["message"] == {"type": "metrics", "ttfb_ms": 312}
    (clear,) = adapter.decode(10, json.dumps({"type": "clear"}))
    assert clear.kind is EventKind.SIGNAL
    audio = adapter.decode(20, b"\x00\x10" * 1600)  # 100 ms at 16 kHz
    assert [e.kind for e in audio] == [EventKind.AUDIO]
    cut = adapter.decode(20 + 40_000_000, json.dumps({"type": "clear"}))
    assert [e.kind for e in cut] == [EventKind.SIGNAL, EventKind.INTERRUPTED]
    assert cut[1].detail == {"reason": "clear", "unplayed_ms": 60.0}
