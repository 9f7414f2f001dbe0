"""Talk-over points on the hosted realtime APIs: each hears the person come in over its reply.

The harness tells OpenAI and xAI where input ends, as at a turn end; once their reply has
started it calls the adapter's ``listen()``, which turns the card's turn detection back on, and
streams silence and the person's clip. Gemini Live's activity detection is set once, at setup,
so at these points it stays on from the start (as at a pause) and Gemini is told nothing. The
fakes (one process each, as a hosted API is elsewhere) say speech started, and stop their
answer, 250 ms after the clip's first sample; pmc stops its playback there and, for OpenAI and
xAI, truncates the answer, as a client does.

Marked ``waiting`` (tests/conftest.py): it streams on the real clock and mostly waits.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pmc.points import Point
from pmc.testing.hosted import Dialect, FakeBehaviour, FakeProcess, fake_process
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
from tests.systems.conftest import KEY, card_at, session_of

pytestmark = pytest.mark.slow

BARGE_IN_DELAY_MS = 250.0
"""The hosted fakes say speech started, and stop their answer, this long after the clip began."""
FRAME_S = 0.02
"""The hosted cards' input frames."""
HOSTED_CARDS = {
    "gpt-realtime-300": Dialect.OPENAI,
    "grok-voice": Dialect.XAI,
    "gemini-3.1-flash-live": Dialect.GEMINI,
}
KEEPS_ENDPOINTER = {"gemini-3.1-flash-live"}
"""Cards whose turn detection stays on at talk-over points: told nothing, asked to listen never."""
PREFIX_PADDING = ("prefixPaddingMs = 300", "prefixPaddingMs = 100")
"""Gemini's fake counts speech as started after this much speech without a dip under its level
(its 20 ms windows): the test's first turn has no 300 ms run of that, so the card's prefix
padding is cut to 100 ms here (the endpointer's own timing is tested elsewhere)."""


@dataclass(frozen=True)
class HostedRun:
    folder: Path
    points: dict[str, Point]
    fakes: dict[str, FakeProcess]


@pytest.fixture(scope="module")
def hosted(tmp_path_factory: pytest.TempPathFactory) -> HostedRun:
    """The three cards at both points, on the real clock, against their fakes."""
    workdir = tmp_path_factory.mktemp("talk-over-hosted")
    points = {p.point_id: p for p in write_talk_over_points(workdir)}
    # Answers come 1.2 s after a turn ends: the answer to the clip then comes more than the
    # 1 s of quiet a yield needs after the stop (sooner, it is the same talk after a breath).
    behaviour = FakeBehaviour(latency_ms=1200.0, barge_in_delay_ms=BARGE_IN_DELAY_MS)
    cards = workdir / "cards"
    args: list[str | Path] = ["run", "--workdir", workdir, "--run-id", "h", "--clock", "real"]
    with pytest.MonkeyPatch.context() as patch, ExitStack() as stack:
        fakes = {}
        for name, dialect in HOSTED_CARDS.items():
            fakes[name] = stack.enter_context(
                fake_process(dialect.value, behaviour, dialect.auth_header)
            )
            card = card_at(name, fakes[name].url, cards)
            if name in KEEPS_ENDPOINTER:
                card.write_text(card.read_text().replace(*PREFIX_PADDING))
            args += ["--system", card]
        for variable in ("OPENAI_API_KEY", "XAI_API_KEY", "GEMINI_API_KEY"):
            patch.setenv(variable, KEY)
        _pmc(*args)
    folder = workdir / "runs" / "h"
    _pmc("score", "--run", folder, "--asr", "faster-whisper:tiny.en", "--workers", "1")
    return HostedRun(folder, points, fakes)


def test_a_hosted_system_listens_once_its_reply_starts_and_is_truncated_where_it_yielded(
    hosted: HostedRun,
) -> None:
    """Against fakes that yield 250 ms after they hear the clip, on the real clock.

    Both sides read one monotonic clock, so the fake's instants are put on the harness's stream
    clock exactly. What pmc measured must be the fake's own stop latency plus what lay between
    them, each measured on this rollout: how late the fake heard the clip (the input frames'
    lateness) and how late its speech-started message was stamped (delivery); within 3 ms.
    """
    for name in HOSTED_CARDS:
        scores = _scores(hosted.folder, name)
        sessions = {s.session_id: s for s in hosted.fakes[name].sessions}
        assert set(scores) == set(hosted.points)
        for point in hosted.points.values():
            trace = _trace(hosted.folder, name, point)
            protocol = _protocol(hosted.folder, name, point)
            onset, clip_at, listen = (
                protocol.reply_onset_stream_s,
                protocol.clip_stream_s,
                protocol.listen_stream_s,
            )
            assert onset is not None and clip_at is not None
            _landed(trace, point, FRAME_S)
            if name in KEEPS_ENDPOINTER:
                assert protocol.end_of_input_stream_s is None and listen is None
            else:
                assert listen is not None and protocol.end_of_input_stream_s is not None
                assert protocol.end_of_input_stream_s < onset <= listen < clip_at
            session = sessions[session_of(trace)]
            assert session.origin_ns is not None
            offset_s = (session.origin_ns - trace["t0_ns"]) / 1e9  # fake clock -> harness's
            # The first answer the fake heard speech over is the reply (a later one may be a
            # pending answer to part of the clip, which the rest of it cancels).
            answer = next(a for a in session.answers if a.heard_s is not None)
            assert answer.stopped_s is not None
            heard = answer.heard_s + offset_s
            stopped = answer.stopped_s + offset_s
            stop = next(o for o in trace["outputs"] if o["kind"] == "interrupted")
            stop_at = (stop["arrival_ns"] - trace["t0_ns"]) / 1e9
            late_s = trace["audit"]["lateness_max_ms"] / 1000
            clip = scores[point.point_id].clip
            least = BARGE_IN_DELAY_MS / 1000
            rollout = hosted.folder / "rollouts" / name / point.point_id / "0"
            quiet = _quiet_at_cut_s(rollout, stop_at)
            delivery = _delivery_s(trace, session.vad_on)
            _measured_is_own(
                clip, clip_at, heard, stopped, stop_at, late_s, least, quiet_s=quiet,
                delivery_s=delivery,
            )  # fmt: skip
            # As a client does, pmc told the server how much of the answer it played.
            truncated = "conversation.item.truncate" in session.received
            assert truncated is (name not in KEEPS_ENDPOINTER), name


def _delivery_s(trace: dict[str, Any], vad_on: tuple[int, int] | None) -> float:
    """How long the chunk that turned the fake's endpointer on took to reach it (0: none did).

    Each live frame is one message, so the fake's n-th chunk is the trace's n-th input frame.
    """
    if vad_on is None:
        return 0.0
    chunk, arrival_ns = vad_on
    _, _, sent_ns = trace["inputs"][chunk - 1]
    return max(0.0, (int(arrival_ns) - int(sent_ns)) / 1e9)
