"""A real LiveKit agent (LiveKit Agents 1.8.9), unmodified, through pmc's console-peer adapter.

The bundled cards start LiveKit's own console (``python -m livekit.agents console FILE
--connect-addr``) on pmc's agent file: a real ``AgentSession`` with Silero and either the VAD
turn rule or LiveKit's local turn detector, pmc's recogniser as its speech-to-text, the
cascade's reply as its language model and the bundled voice as its speech. On the demo's
shortest two pauses (long enough to answer inside) and two turn ends: every rollout completes,
every reply onset pmc measures agrees with the agent's own record of when it started speaking
(when its console wrote the reply's first frame), and the speaker's resumption over
a reply the agent began inside a pause reaches pmc as an interruption (LiveKit's
``audio_playback_clear``).

Marked ``alone``: each agent is a process of its own that transcribes the turn before it
answers, and run in a ``waiting`` lane beside the parallel part on 2 cores (niceness 10) it
began no reply inside either pause, so nothing was cut (three fresh runs out of about twenty).
``make test`` runs it in the lane at normal priority, as Pipecat's bot.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pmc.gate import speech_intervals
from pmc.points import Point, PointKind, read_points
from pmc.scoring import read_scores
from pmc.systems._endpointer import REPLY_TEXT, sentences, voiced
from tests.harness.test_talk_over_run import _pmc, _trace
from tests.systems.conftest import held_off_s, linked_points, shortest

pytestmark = [pytest.mark.slow, pytest.mark.alone]

CARDS = ("livekit-vad", "livekit-turn-detector")
AGREE_S = 0.025
"""The issue's tolerance between pmc's reply onset and the agent's own record, before the
harness's measured lateness."""


def pick(points: list[Point]) -> list[Point]:
    """The shortest two pauses long enough to answer inside, and the shortest two turn ends."""
    return shortest(points, PointKind.PAUSE, 2, room_s=2.0) + shortest(
        points, PointKind.TURN_END, 2
    )


@dataclass(frozen=True)
class Run:
    folder: Path
    points: dict[str, Point]
    records: Path
    """The agents' records of when each reply's first frame left them (monotonic, ns)."""


@pytest.fixture(scope="module")
def run(demo_points_workdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    chosen = pick(read_points(demo_points_workdir))
    assert len(chosen) == 4
    work = linked_points(demo_points_workdir, chosen, tmp_path_factory.mktemp("livekit"))
    records = work / "agent-records.jsonl"
    systems: list[Any] = []
    for card in CARDS:
        systems += ["--system", card]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PMC_LIVEKIT_RECORD", str(records))  # the agents inherit pmc's environment
        _pmc("run", "--workdir", work, "--run-id", "lk", "--clock", "real", *systems)
    folder = work / "runs" / "lk"
    _pmc("score", "--run", folder, "--asr", "faster-whisper:tiny.en", "--workers", "1")
    yield Run(folder, {p.point_id: p for p in chosen}, records)


def _events(trace: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [o["detail"] for o in trace["outputs"] if o["detail"].get("type") == kind]


def _lead_in_s(text: str) -> float:
    """Where the bundled voice's first speech begins in ``text``'s audio (its lead-in)."""
    return speech_intervals(voiced(text))[0].start_s


def test_every_rollout_completes_with_the_agents_own_events(run: Run) -> None:
    assert not list(run.folder.rglob("error.json"))
    for card in CARDS:
        for point in run.points.values():
            trace = _trace(run.folder, card, point)
            states = [
                e["agentStateChanged"]["newState"] for e in _events(trace, "agent_state_changed")
            ]
            assert "AS_LISTENING" in states, (card, point.point_id)


def _reply_starts(trace: dict[str, Any]) -> list[int]:
    """Where pmc stamped each reply's first audio: the first frame after a flush or a clear."""
    starts, fresh = [], True
    for output in trace["outputs"]:
        kind = output["detail"].get("type")
        if kind in ("audio_playback_flush", "audio_playback_clear"):
            fresh = True
        elif output["kind"] == "audio" and fresh:
            starts.append(int(output["arrival_ns"]))
            fresh = False
    return starts


def matched(written: list[int], starts: list[int]) -> list[int | None]:
    """The agent's write of each reply pmc stamped (None where there is none).

    Its last write before the stamp, after the one matched to the stamp before: a write between
    two matched ones stays unmatched, where pairing in order would shift every later pair onto
    another reply.
    """
    out: list[int | None] = []
    used = -1
    for arrival_ns in starts:
        before = [i for i, sent_ns in enumerate(written) if used < i and sent_ns <= arrival_ns]
        used = before[-1] if before else used
        out.append(written[used] if before else None)
    return out


def test_every_reply_onset_agrees_with_the_agents_own_record(run: Run) -> None:
    """Pmc stamps each reply where the agent wrote it, and scores its onset there.

    The agent's record is the moment its console wrote the reply's first frame
    (``PMC_LIVEKIT_RECORD``): never after pmc's stamp, at most 25 ms plus pmc's measured
    lateness before it. The scored onset is that stamp plus the bundled voice's lead-in.
    """
    records = [json.loads(line) for line in run.records.read_text().splitlines()]
    checked = onsets = 0
    for card in CARDS:
        scores = {s.point_id: s for s in read_scores(run.folder, card)}
        for point in run.points.values():
            trace = _trace(run.folder, card, point)
            (console,) = _events(trace, "pmc.console")
            t0 = int(trace["t0_ns"])
            end = max(int(o["arrival_ns"]) for o in trace["outputs"])
            # Only this rollout's agent's writes inside its span are its own: pmc listens on a
            # new port for each rollout, and a port may be handed out again while the agent of
            # the rollout that had it is still shutting down. (Paired in order, fresh runs put a
            # reply 17 s, and once 0.49 s, after a write of the same address; which write that
            # was is not known, the runs' folders being gone.)
            written = sorted(
                r["first_audio_written_ns"]
                for r in records
                if (r["addr"], r["pid"]) == (console["addr"], console["pid"])
                and t0 <= r["first_audio_written_ns"] <= end
            )
            starts = _reply_starts(trace)
            assert len(written) >= len(starts) >= 1, (card, point.point_id)
            for sent_ns, arrival_ns in zip(matched(written, starts), starts, strict=True):
                assert sent_ns is not None, (card, point.point_id, written, starts)
                late = (arrival_ns - sent_ns) / 1e9
                assert 0.0 <= late <= AGREE_S + held_off_s(trace), (card, point.point_id, late)
                checked += 1
            score = scores[point.point_id]
            latency = score.reply.latency_s if score.reply is not None else None
            if latency is None and score.pause is not None:
                latency = score.pause.latency_s
            if latency is None:
                continue
            onset = point.boundary_stream_s + latency
            start = max(s for s in starts if (s - t0) / 1e9 <= onset + 0.005)
            sound = (start - t0) / 1e9 + _lead_in_s(sentences(REPLY_TEXT)[0])
            assert -0.005 <= onset - sound <= AGREE_S, (card, point.point_id, onset, sound)
            onsets += 1
    assert checked >= 8 and onsets >= 4, (checked, onsets)


def test_a_barge_in_reaches_pmc_as_an_interruption(run: Run) -> None:
    stops = []
    for card in CARDS:
        for point in run.points.values():
            if point.kind is not PointKind.PAUSE:
                continue
            trace = _trace(run.folder, card, point)
            stops += [o for o in trace["outputs"] if o["kind"] == "interrupted"]
    assert stops, "no reply begun inside a pause was cut by the speaker's resumption"
    assert all(s["detail"]["reason"] == "audio_playback_clear" for s in stops)
    assert all(s["detail"]["unplayed_ms"] > 0 for s in stops)
