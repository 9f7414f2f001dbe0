"""Talk-over points on a full-duplex system: the clip is streamed over its reply and it decides.

The ``moshi`` card against :class:`pmc.testing.duplex_server.ListeningMoshi` (one process each, as a
model server is elsewhere), on the real clock: one fake stops its speech 250 ms after the
speech it hears while talking begins, cut to the sample, the other never stops. A duplex model
gets no interruption message from pmc: the harness only streams, and what the model does is
heard on its output, through the codec.

Marked ``waiting`` (tests/conftest.py): it streams on the real clock and mostly waits.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

from pmc.duplex_server import FRAME_SAMPLES, SAMPLE_RATE
from pmc.points import Point
from pmc.testing.duplex_server import (
    OPUS_DELAY_S,
    OPUS_POST_ECHO_S,
    OPUS_PRE_ECHO_S,
    ListenerBehaviour,
    ListenerProcess,
    listening_moshi_process,
)
from pmc.testing.points import write_talk_over_points
from tests.harness.test_known_timing import delivery_s, duplex_card, duplex_sessions
from tests.harness.test_talk_over_run import _landed, _pmc, _protocol, _scores

pytestmark = pytest.mark.slow

YIELD_MS = 250.0
"""The yielding fake stops this long after the speech it heard began."""
WINDOW_S = 0.02
"""The fake's endpointer places a start on its 20 ms window grid: up to a window early."""
NAMES = {"moshi-yields": YIELD_MS, "moshi-never": None}
REPLY = (
    "Right, I see what you mean. Tell me a little more about that, and about the beach, "
    "and about what the dog did when it got there."
)
"""Long enough to run on well past both clips (about 7 s): a fake that never stops is still
talking 2 s after either clip began, so it cannot count as having yielded."""
SILENCE_MS = 1200.0
"""Both fakes answer a turn 1.2 s after it ends: the yielding one's answer to the clip itself
then comes more than the 1 s of quiet a yield needs after its stop."""


@dataclass(frozen=True)
class DuplexRun:
    folder: Path
    points: dict[str, Point]
    fakes: dict[str, ListenerProcess]


@pytest.fixture(scope="module")
def duplex(tmp_path_factory: pytest.TempPathFactory) -> DuplexRun:
    """Both fakes behind the ``moshi`` card at both points, on the real clock, then scored."""
    workdir = tmp_path_factory.mktemp("talk-over-duplex")
    points = {p.point_id: p for p in write_talk_over_points(workdir)}
    args: list[str | Path] = ["run", "--workdir", workdir, "--run-id", "d", "--clock", "real"]
    with ExitStack() as stack:
        fakes = {}
        for name, yield_ms in NAMES.items():
            behaviour = ListenerBehaviour(
                silence_ms=SILENCE_MS,
                reply_text=REPLY,
                barge_in=yield_ms is not None,
                yield_ms=yield_ms,
            )
            fakes[name] = stack.enter_context(listening_moshi_process(behaviour))
            (workdir / name).mkdir()
            card = duplex_card(fakes[name].url, workdir / name, len(points))
            args += ["--system", card.rename(card.with_name(f"{name}.toml"))]
        _pmc(*args, "--concurrency", str(2 * len(points)))
    folder = workdir / "runs" / "d"
    _pmc("score", "--run", folder, "--asr", "faster-whisper:tiny.en", "--workers", "1")
    return DuplexRun(folder, points, fakes)


def test_a_duplex_stop_is_the_fakes_own_after_the_codec(duplex: DuplexRun) -> None:
    """The stop pmc measures is the fake's own through the codec, within 3 ms and its tail.

    Both sides read one monotonic clock, so the fake's record is put on the harness's stream
    clock by the two origins (the fake estimates its own from when its input arrived: held off
    the processor, it reads every frame late and its estimate is that much late). The fake
    heard the clip on its decoded input (the codec's delay later, up to a window early on its
    endpointer's grid), stopped 250 ms later, and a client decodes that stop the codec's delay
    later again, up to :data:`OPUS_POST_ECHO_S` later still where the codec spreads the cut's
    last samples past it; on a loaded machine later still, by at most how late the harness
    stamped the frames up to it (its playback places a late frame late).
    """
    scores = _scores(duplex.folder, "moshi-yields")
    sessions = duplex_sessions(duplex.folder, duplex.fakes["moshi-yields"], "moshi-yields")
    assert set(scores) == set(sessions) == set(duplex.points)
    for point_id, (trace, session) in sessions.items():
        protocol = _protocol(duplex.folder, "moshi-yields", duplex.points[point_id])
        clip_at = protocol.clip_stream_s
        assert clip_at is not None and protocol.reply_onset_stream_s is not None
        _landed(trace, duplex.points[point_id], FRAME_SAMPLES / SAMPLE_RATE)
        answer = next(a for a in session.answers if a.heard_s is not None)
        assert answer.heard_s is not None and answer.stopped_s is not None
        assert answer.speech_s is not None and session.origin_ns is not None
        offset_s = (session.origin_ns - trace["t0_ns"]) / 1e9  # fake clock -> harness's
        assert answer.speech_s + offset_s < clip_at  # it was talking when the clip came
        heard = answer.heard_s - OPUS_DELAY_S  # undo its decoder: where the clip began
        late_s = trace["audit"]["lateness_max_ms"] / 1000
        assert -(WINDOW_S + OPUS_PRE_ECHO_S) <= heard - clip_at <= late_s + WINDOW_S + 0.003
        stopped = answer.stopped_s + offset_s
        assert stopped - heard >= YIELD_MS / 1000 - 0.001  # its own yield, at least
        # Where a client's decoder ends its speech: the codec's delay after the fake's stop, and
        # later by as much as the harness stamped any frame up to it late (at most).
        stop_at = stopped + OPUS_DELAY_S - clip_at
        delivery = delivery_s(trace, session, answer, cut=True)
        clip = scores[point_id].clip
        assert clip is not None and clip.talking and clip.stop_latency_s is not None
        error = clip.stop_latency_s - stop_at
        print(f"{point_id}: measured minus the fake's stop {error * 1000:+.1f} ms, ", end="")
        print(f"frames stamped up to {delivery * 1000:.1f} ms late, ", end="")
        print(f"the fake's clock {offset_s * 1000:+.1f} ms behind the harness's")
        assert -0.003 <= error <= delivery + OPUS_POST_ECHO_S + 0.003
        assert clip is not None and clip.yielded


def test_a_duplex_model_that_never_stops_never_yields(duplex: DuplexRun) -> None:
    for point_id, score in _scores(duplex.folder, "moshi-never").items():
        clip = score.clip
        assert clip is not None and clip.reached and clip.talking, point_id
        assert not clip.yielded
        # it talked through the whole clip
        assert clip.onset_s is not None and clip.clip_end_s is not None
        assert clip.talk_over_s == pytest.approx(clip.clip_end_s - clip.onset_s, abs=0.001)
