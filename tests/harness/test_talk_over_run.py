"""Talk-over points through ``pmc run``, ``pmc score`` and ``pmc report``, against known systems.

Two points (``pmc.testing.points.write_talk_over_points``): a barge-in and a backchannel. A
scripted system replies 4 s into the stream and, told to, stops 300 ms after it hears input
while it speaks, saying in its ``interrupted`` event when it heard and when it stopped; another
never stops; the person replays the real reply, cut where the person gave up the floor at the
barge-in. On the virtual clock the clip must land at the reply's onset plus the point's offset,
each measured stop latency must equal the system's own record within 3 ms, and the person's
must equal the labelled one within 5 ms.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from pmc.audio import SAMPLE_RATE
from pmc.cli import cli
from pmc.gate import GateParams, refine_end
from pmc.harness import ProtocolRecord, read_rollout
from pmc.points import Point, PointKind
from pmc.scoring import ClipScore, Score, read_scores
from pmc.systems import bundled_cards
from pmc.testing.points import write_talk_over_points
from pmc.testing.systems import ScriptedSystem

pytestmark = pytest.mark.slow

REPLY_AT_S = 4.0
"""Where the scripted systems start their reply on the stream clock (after both turn ends)."""
YIELD_MS = 300
CARD = """adapter = "scripted"
family = "local"
description = "{name}"

[params]
say = [{{ at_s = {at_s}, seconds = 4.0, text = "well I think that is right" }}]
{extra}
"""
SYSTEMS = {"yields": f"yield_ms = {YIELD_MS}", "never-yields": ""}
SCRIPTED = ScriptedSystem
"""Imported for its registration: ``adapter = "scripted"`` names it in this process."""


def _pmc(*args: str | Path) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Point]]:
    workdir = tmp_path_factory.mktemp("talk-over")
    points = {p.point_id: p for p in write_talk_over_points(workdir)}
    assert all(p.boundary_stream_s < REPLY_AT_S - 1.0 for p in points.values())
    args: list[str | Path] = ["run", "--workdir", workdir, "--run-id", "t"]
    for name, extra in SYSTEMS.items():
        card = workdir / f"{name}.toml"
        card.write_text(CARD.format(name=name, at_s=REPLY_AT_S, extra=extra))
        args += ["--system", card]
    args += ["--systems-dir", bundled_cards(), "--system", "person"]
    _pmc(*args)
    folder = workdir / "runs" / "t"
    _pmc("score", "--run", folder, "--asr", "faster-whisper:tiny.en", "--workers", "1")
    return folder, points


def _trace(folder: Path, system: str, point: Point) -> dict:  # type: ignore[type-arg]
    path = folder / "rollouts" / system / point.point_id / "0" / "trace.json"
    trace: dict = json.loads(path.read_text())  # type: ignore[type-arg]
    return trace


def _protocol(folder: Path, system: str, point: Point) -> ProtocolRecord:
    record = ProtocolRecord.of_trace(_trace(folder, system, point))
    assert record is not None
    return record


QUIET_AT_CUT_S = 0.010
"""The most the played reply may have been quiet for when it was cut: it was cut mid-speech."""


def _quiet_at_cut_s(rollout: Path, stop_at: float) -> float:
    """How long before ``stop_at`` the played speech had already fallen under the gate.

    The gate ends speech at the last sample its envelope holds at the release level
    (:func:`pmc.gate.refine_end`), so a reply cut in a quiet sound, or just after one, ends
    that much before the cut.
    """
    _, track = read_rollout(rollout)
    params = GateParams()
    width = round(params.window_s * SAMPLE_RATE)
    edge = math.ceil(stop_at * SAMPLE_RATE / width) * width
    return max(0.0, stop_at - refine_end(track, edge, params, SAMPLE_RATE) / SAMPLE_RATE)


def _measured_is_own(
    clip: ClipScore | None,
    clip_at: float,
    heard: float,
    stopped: float,
    stop_at: float,
    late_s: float,
    least_own_s: float,
    early_s: float = 0.001,
    quiet_s: float = 0.0,
    delivery_s: float = 0.0,
) -> None:
    """A remote fake's stop, put on the harness's stream clock, against what pmc measured.

    ``heard`` and ``stopped``: where the fake heard the clip and stopped; ``stop_at``: where pmc
    stamped that stop. pmc's stop latency must be the fake's own, plus how late the fake heard
    the clip (at most the input frames' lateness; ``early_s`` earlier at most) and how late the
    stop was stamped (delivery), within 3 ms, less what the reply was already quiet for at the
    cut (``quiet_s``, :func:`_quiet_at_cut_s`; at most :data:`QUIET_AT_CUT_S`). Where the fake
    places what it heard by when a chunk arrived, ``delivery_s`` is how long that chunk took to
    reach it (a loaded machine's event loops add to it).
    """
    assert -early_s <= heard - clip_at <= late_s + delivery_s + 0.003, heard - clip_at
    delivery = stop_at - stopped
    assert delivery >= -0.001
    own = stopped - heard
    assert own >= least_own_s - 0.001
    assert clip is not None and clip.talking and clip.stop_latency_s is not None
    assert 0.0 <= quiet_s <= QUIET_AT_CUT_S, quiet_s
    expected = own + (heard - clip_at) + delivery
    assert expected - quiet_s - 0.003 <= clip.stop_latency_s <= expected + 0.003, (
        clip.stop_latency_s,
        expected,
        quiet_s,
    )


def _landed(trace: dict, point: Point, frame_s: float) -> None:  # type: ignore[type-arg]
    """On the real clock: the clip lands at the reply's onset plus the point's offset.

    It is placed there, and the frame carrying its first sample went out no later than the
    trace's measured lateness. A frame is due at the end of the stream time it spans
    (docs/architecture.md "Clocks").
    """
    protocol = ProtocolRecord.of_trace(trace)
    assert protocol is not None and point.inject_offset_s is not None
    onset, clip_at = protocol.reply_onset_stream_s, protocol.clip_stream_s
    assert onset is not None and clip_at is not None
    assert clip_at == pytest.approx(onset + point.inject_offset_s, abs=1e-6)
    index = int(clip_at // frame_s)
    # A hosted system told where input ends is sent nothing until it listens: frames by number.
    _, due_ns, sent_ns = next(frame for frame in trace["inputs"] if frame[0] == index)
    assert (due_ns - trace["t0_ns"]) / 1e9 == pytest.approx((index + 1) * frame_s, abs=1e-6)
    assert 0 <= (sent_ns - due_ns) / 1e6 <= trace["audit"]["lateness_max_ms"] + 0.001


def _scores(folder: Path, system: str) -> dict[str, Score]:
    return {s.point_id: s for s in read_scores(folder, system)}


def test_the_clip_lands_at_the_replys_onset_plus_the_points_offset(
    run: tuple[Path, dict[str, Point]],
) -> None:
    folder, points = run
    for system in (*SYSTEMS, "person"):
        for point in points.values():
            protocol = _protocol(folder, system, point)
            assert protocol.kind is point.kind
            onset, clip = protocol.reply_onset_stream_s, protocol.clip_stream_s
            assert onset is not None and clip is not None and point.inject_offset_s is not None
            assert clip == pytest.approx(onset + point.inject_offset_s, abs=1e-6), system
            if system != "person":
                assert onset == pytest.approx(REPLY_AT_S, abs=0.001)


def test_each_stop_latency_is_the_systems_own_record_within_3_ms(
    run: tuple[Path, dict[str, Point]],
) -> None:
    folder, points = run
    scores = _scores(folder, "yields")
    for point in points.values():
        protocol = _protocol(folder, "yields", point)
        (stop,) = [
            o for o in _trace(folder, "yields", point)["outputs"] if o["kind"] == "interrupted"
        ]
        assert protocol.clip_stream_s is not None
        # It heard the clip from its first sample, and stopped 300 ms later.
        assert stop["detail"]["heard_stream_s"] == pytest.approx(protocol.clip_stream_s, abs=0.001)
        own = stop["detail"]["stopped_stream_s"] - protocol.clip_stream_s
        clip = scores[point.point_id].clip
        assert clip is not None and clip.talking and clip.stop_latency_s is not None
        assert clip.stop_latency_s == pytest.approx(own, abs=0.003)
        assert own == pytest.approx(YIELD_MS / 1000, abs=0.001)
        assert clip.yielded  # at the backchannel, a false yield


def test_a_system_that_never_yields_is_scored_as_not_yielding_at_every_point(
    run: tuple[Path, dict[str, Point]],
) -> None:
    folder, points = run
    scores = _scores(folder, "never-yields")
    assert set(scores) == set(points)
    for point_id, score in scores.items():
        protocol = _protocol(folder, "never-yields", points[point_id])
        clip = score.clip
        assert clip is not None and clip.talking and not clip.yielded
        assert protocol.clip_stream_s is not None and clip.stop_latency_s is not None
        # It talked to the end of its 4 s reply.
        end = REPLY_AT_S + 4.0 - protocol.clip_stream_s
        assert clip.stop_latency_s == pytest.approx(end, abs=0.003)


def test_the_person_reproduces_its_labelled_yield_and_keeps_talking_through_a_backchannel(
    run: tuple[Path, dict[str, Point]],
) -> None:
    folder, points = run
    for point_id, score in _scores(folder, "person").items():
        point, clip = points[point_id], score.clip
        assert clip is not None and clip.talking and clip.stop_latency_s is not None
        if point.kind is PointKind.BARGE_IN:
            assert point.person_yield_s is not None
            assert clip.stop_latency_s == pytest.approx(point.person_yield_s, abs=0.005)
            assert clip.person_s == point.person_yield_s and clip.yielded
        else:
            assert point.person_kept_talking_s is not None
            assert clip.stop_latency_s == pytest.approx(point.person_kept_talking_s, abs=0.005)
            assert not clip.yielded  # it kept the floor


def test_the_report_has_the_talk_over_tables_and_figure(
    run: tuple[Path, dict[str, Point]],
) -> None:
    folder, _ = run
    _pmc("report", "--run", folder)
    results = json.loads((folder / "report" / "results.json").read_text())
    rows = {(r["system"], r["kind"]): r["values"] for r in results["main_table"]}
    assert rows[("yields", "barge_in")]["yielded"]["estimate"] == 1.0
    assert rows[("never-yields", "backchannel")]["yielded"]["estimate"] == 0.0
    assert rows[("person", "barge_in")]["stop_s"]["estimate"] == pytest.approx(
        rows[("person", "barge_in")]["person_s"]["estimate"], abs=0.005
    )
    assert (folder / "report" / "figures" / "talk_over.png").exists()
