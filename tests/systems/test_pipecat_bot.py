"""pmc's ``twilio-agent`` and ``pipecat-agent`` cards against a real Pipecat 1.14 bot.

The bot (:mod:`pmc.testing.pipecat_bot`, a child process) runs Pipecat's own pipeline: Silero
VAD, Smart Turn v3.2, a canned reply spoken by Piper, behind the Twilio serializer (8 kHz) on one
route and Pipecat's protobuf serializer (16 kHz) on another; each card runs against its route.
It logs on ``time.monotonic_ns()``, the harness's real clock on this machine, when its turn
analyzer ended each caller turn, when each reply's first audio left and each interruption (a
Twilio ``clear``, an ``InterruptionFrame``). Both cards play the same demo points. From that
log alone:

- each reply's onset in pmc's trace (its first audio's arrival, on the stream clock) is where
  the bot sent it, within :data:`ON_TIME_S` (a 20 ms chunk and the loopback), widened only by
  the lateness the trace measured;
- at a pause, pmc's outcome (a reply began inside the labelled pause) is the bot's (its turn
  analyzer ended the turn inside the pause);
- on barge-in (the speaker resumes over the reply) the bot's interruption reaches pmc as an
  ``interrupted`` output, and nothing of the cut reply arrives after it.

Marked ``alone``: the bot is a process of its own, and beside another worker on 2 cores its
reply can start so late that the caller's barge-in clears it before any of it has played
(seen once in a parallel run: 1 ms between the reply's first audio and the clear), which leaves
nothing to check the cut against. ``make test`` runs it after the parallel part, by itself.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from pmc.audio import SAMPLE_RATE
from pmc.harness import ProtocolParams, RunSettings, SystemTally, run_rollouts, runs_dir
from pmc.points import Point, PointKind, read_points
from pmc.systems import load_card
from pmc.testing.hosted import answer_audio
from pmc.testing.pipecat_bot import (
    REPLY_TEXT,
    BotEvent,
    BotEventKind,
    RunningBot,
    Wire,
    pipecat_bot,
    read_log,
)
from tests.systems.conftest import card_at, held_off_s, linked_points, traces

pytestmark = [pytest.mark.slow, pytest.mark.alone]

CARDS = {Wire.TWILIO: "twilio-agent", Wire.PROTOBUF: "pipecat-agent"}
CLEARS = {Wire.TWILIO: "clear", Wire.PROTOBUF: "interruption"}
"""The ``detail.event`` of the signal that carries the bot's interruption, per wire."""
QUICK = ProtocolParams(reply_silence_s=0.5, no_reply_s=4.0, pause_drain_s=1.0, pause_extra_s=1.0)
ON_TIME_S = 0.025
"""pmc's onset of a reply and the bot's own stamp of its first ``media`` agree within this."""
GAP_S = 0.15
"""Audio arriving this long after the previous audio begins a new reply (the bot paces its
audio every 20 to 40 ms; a new reply needs a new turn end, at least 0.2 s of the VAD's silence)."""
WHOLE_S = 0.5
"""A reply counts as whole once at most this much short of the canned answer has arrived (the
barge-in check below asks of a cut reply that it played at least this much less)."""
NS = 1e9
SILENT = 1e-4
"""Peak amplitude below which the played track is silence (Piper's quietest speech is ~1e-2)."""


def sample(at_s: float) -> int | None:
    """The played track's sample at stream time ``at_s`` (None past the end: an open slice)."""
    return None if math.isinf(at_s) else round(at_s * SAMPLE_RATE)


def pick(points: list[Point]) -> list[Point]:
    """The shortest live streams: two pauses and two turn ends."""

    def live_s(p: Point) -> float:
        return p.stream_end_conv_s - p.stream_start_conv_s

    pauses = [p for p in points if p.kind is PointKind.PAUSE]
    ends = [p for p in points if p.kind is PointKind.TURN_END]
    chosen = sorted(pauses, key=live_s)[:2] + sorted(ends, key=live_s)[:2]
    assert len(chosen) == 4
    return chosen


@dataclass
class Rollout:
    point: Point
    trace: dict[str, Any]
    events: list[BotEvent]
    """The bot's log of this rollout's call."""
    track: np.ndarray
    """The played track (``played.flac``): the bot as the caller heard it, on the stream clock."""

    def stream_s(self, ns: int) -> float:
        return (ns - int(self.trace["t0_ns"])) / NS

    def logged_s(self, kind: BotEventKind) -> list[float]:
        return [self.stream_s(e.ns) for e in self.events if e.event is kind]

    def outputs(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.trace["outputs"] if o["kind"] == kind]

    def onsets_s(self) -> list[float]:
        """Where each reply's first audio arrived in pmc's trace (stream clock).

        Audio after a gap of :data:`GAP_S` begins a new reply only once the reply before it
        has arrived whole (:data:`WHOLE_S` short of the canned answer at most) or was cut by an
        interruption: the bot, held off the processor, can stall its own pacing in mid-reply
        (a loaded fresh run heard a gap at 3.1 s inside one of the bot's four replies).
        """
        whole = len(answer_audio(REPLY_TEXT)) - round(WHOLE_S * SAMPLE_RATE)
        found: list[float] = []
        last = None
        heard = 0  # samples of the current reply so far
        cut = False  # an interruption came since the current reply began
        for output in self.trace["outputs"]:
            if output["kind"] == "interrupted":
                cut = True
            if output["kind"] != "audio" or not output["samples"]:
                continue
            at = self.stream_s(output["arrival_ns"])
            if last is None or (at - last > GAP_S and (heard >= whole or cut)):
                found.append(at)
                heard, cut = 0, False
            heard += int(output["samples"])
            last = at
        return found

    def tolerance_s(self) -> float:
        return ON_TIME_S + held_off_s(self.trace)


@dataclass
class Played:
    wire: Wire
    tally: SystemTally
    rollouts: list[Rollout]
    calls: int


@pytest.fixture(scope="module")
def bot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningBot]:
    """One bot for both wires (it loads Pipecat and voices its reply once)."""
    with pipecat_bot(tmp_path_factory.mktemp("pipecat-bot") / "bot.jsonl") as running:
        yield running


@pytest.fixture(scope="module", params=list(Wire))
def played(
    request: pytest.FixtureRequest,
    bot: RunningBot,
    demo_points_workdir: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Played:
    wire: Wire = request.param
    name = CARDS[wire]
    work = tmp_path_factory.mktemp(f"pipecat-{wire}")
    chosen = {p.point_id: p for p in pick(read_points(demo_points_workdir))}
    workdir = linked_points(demo_points_workdir, list(chosen.values()), work / "w")
    before = max((e.call for e in read_log(bot.log)), default=0)
    card = load_card(card_at(name, bot.urls[wire], work / "cards"))
    settings = RunSettings("pipecat", retries=0, params=QUICK, concurrency=1)
    tally = run_rollouts(workdir, [card], settings)[name]
    # The bot logs a call's end as it notices the hang-up: wait for the last one.
    events = _logged_until_ended(bot.log, before, len(chosen))
    found = sorted(
        traces(runs_dir(workdir) / "pipecat", name).items(), key=lambda item: item[1]["t0_ns"]
    )
    # One call at a time: the n-th rollout by start time is the bot's n-th call of this run.
    folder = runs_dir(workdir) / "pipecat" / "rollouts" / name
    rollouts = [
        Rollout(
            chosen[point],
            trace,
            [e for e in events if e.call == before + n],
            sf.read(folder / point / "0" / "played.flac", dtype="float32")[0],
        )
        for n, (point, trace) in enumerate(found, start=1)
    ]
    calls = len({e.call for e in events if e.event is BotEventKind.CALL_START})
    return Played(wire, tally, rollouts, calls)


def _logged_until_ended(log: Path, before: int, calls: int, wait_s: float = 5.0) -> list[BotEvent]:
    """The log's events of the calls after ``before``, once ``calls`` of them have ended."""
    deadline = time.monotonic() + wait_s
    while True:
        events = [e for e in read_log(log) if e.call > before]
        ended = sum(e.event is BotEventKind.CALL_END for e in events)
        if ended >= calls or time.monotonic() > deadline:
            return events
        time.sleep(0.05)


def test_every_rollout_is_one_call_to_the_bot(played: Played) -> None:
    assert (played.tally.done, played.tally.failed) == (4, 0), played.tally.causes
    assert played.calls == len(played.rollouts) == 4
    for rollout in played.rollouts:
        kinds = [e.event for e in rollout.events]
        assert kinds[0] is BotEventKind.CALL_START and kinds[-1] is BotEventKind.CALL_END
        # the bot read the call's start as the stream began: calls and rollouts are matched
        assert abs(rollout.logged_s(BotEventKind.CALL_START)[0]) < 0.5


def test_the_bot_answers_each_turn_end_and_pmc_takes_it_as_a_reply(played: Played) -> None:
    for rollout in played.rollouts:
        if rollout.point.kind is not PointKind.TURN_END:
            continue
        assert rollout.logged_s(BotEventKind.TURN_END), rollout.point.point_id
        assert rollout.logged_s(BotEventKind.FIRST_AUDIO), rollout.point.point_id
        assert rollout.trace["protocol"]["stop_reason"] == "replied"


def test_pmc_hears_each_reply_where_the_bot_sent_it(played: Played) -> None:
    replies = 0
    for rollout in played.rollouts:
        sent = rollout.logged_s(BotEventKind.FIRST_AUDIO)
        heard = rollout.onsets_s()
        assert len(heard) == len(sent), (rollout.point.point_id, heard, sent)
        for at_heard, at_sent in zip(heard, sent, strict=True):
            assert abs(at_heard - at_sent) <= rollout.tolerance_s(), (at_heard, at_sent)
            assert at_heard - at_sent >= 0  # received after it was sent, on one clock
        replies += len(sent)
    assert replies >= 4


def test_pmc_pause_outcome_is_the_bot_turn_analyzer_verdict(played: Played) -> None:
    """A reply begun inside the pause exactly where the analyzer ended the turn there.

    The verdict is the analyzer's turn end and the reply it sent for it: on a loaded machine
    the reply can leave after the person resumed (its voice comes later than the decision), and
    pmc then rightly hears no takeover. A reply that left inside the pause but reached pmc after
    it (the wire's lag straddled the pause's end) is not compared.
    """
    compared = 0
    for rollout in played.rollouts:
        if rollout.point.kind is not PointKind.PAUSE:
            continue
        start, end = rollout.point.boundary_stream_s, rollout.point.boundary_end_stream_s
        ended = [t for t in rollout.logged_s(BotEventKind.TURN_END) if start <= t <= end]
        sent = [t for t in rollout.logged_s(BotEventKind.FIRST_AUDIO) if ended and t >= ended[0]]
        verdict = bool(sent) and sent[0] <= end
        onsets = rollout.onsets_s()
        began = [t for t in onsets if start <= t <= end]
        if verdict and not began and any(t > end for t in onsets):
            continue  # sent inside, heard after: pmc's outcome is the wire's, not the bot's
        assert bool(began) == verdict, (rollout.point.point_id, start, end, ended, sent, began)
        compared += 1
    assert compared, "every pause's reply straddled its end on the wire"


def test_barge_in_clear_reaches_pmc_and_nothing_of_the_cut_reply_follows(played: Played) -> None:
    reply_s = len(answer_audio(REPLY_TEXT)) / SAMPLE_RATE
    cut = 0
    for rollout in played.rollouts:
        sent = rollout.logged_s(BotEventKind.CLEAR)
        clear = CLEARS[played.wire]
        clears = [o for o in rollout.outputs("signal") if o["detail"].get("event") == clear]
        heard = [rollout.stream_s(o["arrival_ns"]) for o in clears]
        assert len(heard) == len(sent), (rollout.point.point_id, heard, sent)
        for at_heard, at_sent in zip(heard, sent, strict=True):
            assert 0 <= at_heard - at_sent <= rollout.tolerance_s(), (at_heard, at_sent)
        onsets = rollout.logged_s(BotEventKind.FIRST_AUDIO)
        for interrupted in rollout.outputs("interrupted"):
            at = rollout.stream_s(interrupted["arrival_ns"])
            assert any(abs(at - c) <= rollout.tolerance_s() for c in sent)  # the bot's clear
            began = max(t for t in onsets if t < at)
            following = [t for t in onsets if t > at]
            until = min(following) if following else float("inf")
            audio = [
                (rollout.stream_s(o["arrival_ns"]), o["samples"]) for o in rollout.outputs("audio")
            ]
            played_s = sum(n for t, n in audio if began <= t <= at) / SAMPLE_RATE
            assert played_s < reply_s - WHOLE_S, (played_s, reply_s)  # cut, not finished
            # Of the cut reply, pmc hears after the clear exactly what the bot still sent after
            # it (nothing, unless Pipecat's output task raced the interruption), each piece
            # where the bot sent it; then only a later reply's audio.
            margin = rollout.tolerance_s()
            after = [(t, n) for t, n in audio if at < t < until - margin]
            late = [
                t
                for t in rollout.logged_s(BotEventKind.AUDIO_AFTER_CLEAR)
                if at - margin < t < until
            ]
            assert len(after) == len(late), (
                f"{rollout.point.point_id}: audio (stream s, samples) {after} arrived after the "
                f"clear at {at:.4f} s (the bot sent it at {sent}) and before the next reply's "
                f"first audio at {until:.4f} s; the bot sent {late} after its clear; "
                f"tolerance {margin:.4f} s"
            )
            for (t, _), t_sent in zip(after, late, strict=True):
                assert 0 <= t - t_sent <= margin, (t, t_sent)
            # and the played track falls silent once they have played, until the next reply
            quiet_from = max([at, *(t + n / SAMPLE_RATE for t, n in after)])
            silent = rollout.track[sample(quiet_from + margin) : sample(until - margin)]
            assert len(silent) and np.abs(silent).max() < SILENT, (at, until)
            # up to the clear itself, from where pmc stamped the reply's first audio, wherever
            # that is longer than the stamps' own uncertainty: on a loaded machine the bot can
            # begin a reply so late that the barge-in clears it 11 ms on (a loaded fresh run)
            heard = [t for t, n in audio if began <= t <= at and n]
            if heard and at - heard[0] > ON_TIME_S:
                sounding = rollout.track[sample(heard[0]) : sample(at)]
                assert np.abs(sounding).max() > 100 * SILENT, ("it never sounded", heard[0], at)
            cut += 1
    assert cut >= 1, "no reply was cut: the points give no barge-in"
