"""The rollouts stage: reference systems on real point files, resume, failures, determinism."""

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pmc import io
from pmc.errors import PmcError
from pmc.harness import (
    ERROR_FILE,
    RUN_FILE,
    TRACE_FILE,
    Backoff,
    ClockKind,
    ProtocolParams,
    RolloutTrace,
    RunSettings,
    StopReason,
    read_rollout,
    rollout_dir,
    run_rollouts,
    runs_dir,
)
from pmc.points import Point, PointKind
from pmc.systems import Family, SystemCard, bundled_cards, find_card
from pmc.testing.points import write_points
from pmc.testing.systems import ScriptedSystem

SYSTEMS = bundled_cards()
RATE = 24_000


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("points-work")
    write_points(path)
    return path


@pytest.fixture(scope="module")
def points(workdir: Path) -> list[Point]:
    from pmc.points import read_points

    return read_points(workdir)


def cards(*names: str) -> list[SystemCard]:
    return [find_card(n, SYSTEMS) for n in names]


def first_loud_s(track: np.ndarray) -> float | None:
    window = 480
    n = len(track) // window
    rms = np.sqrt((track[: n * window].reshape(n, window).astype(np.float64) ** 2).mean(axis=1))
    loud = np.flatnonzero(rms >= 0.01)
    return float(loud[0] * window / RATE) if loud.size else None


def outcome(run: Path, system: str, point: Point) -> tuple[StopReason | None, float, float | None]:
    trace, track = read_rollout(rollout_dir(run, system, point.point_id, 0))
    p = trace.protocol
    assert p is not None
    return p.stop_reason, p.stop_stream_s, first_loud_s(track)


def test_reference_systems_do_what_defines_them(workdir: Path, points: list[Point]) -> None:
    settings = RunSettings("refs")
    names = ("never-speak", "always-speak", "person", "shuffled-person")
    tallies = run_rollouts(workdir, cards(*names), settings)
    assert {n: (t.done, t.failed) for n, t in tallies.items()} == {n: (4, 0) for n in names}
    run = runs_dir(workdir) / "refs"
    for p in points:
        never = outcome(run, "never-speak", p)
        assert never[2] is None
        always = outcome(run, "always-speak", p)
        # Talking from the first frame on (20 ms), after the voice's own lead-in (~80 ms).
        assert always[2] == pytest.approx(0.0, abs=0.15)
        person = outcome(run, "person", p)
        if p.kind is PointKind.PAUSE:
            assert never[0] is person[0] is StopReason.DRAINED
            assert person[2] is None  # the person held the pause
        else:
            assert never[0] is StopReason.NO_REPLY
            assert always[0] is StopReason.CAP
            assert person[0] is StopReason.REPLIED
    ends = [p for p in points if p.kind is PointKind.TURN_END]
    for p in ends:
        assert p.reply_start_conv_s is not None
        reply_at = p.reply_start_conv_s - p.stream_start_conv_s
        for system in ("person", "shuffled-person"):
            onset = outcome(run, system, p)[2]
            assert onset is not None
            assert onset == pytest.approx(reply_at, abs=0.1)
    # The shuffled person replays the other turn end's reply; the person its own.
    a, b = ends
    trace_a, _ = read_rollout(rollout_dir(run, "shuffled-person", a.point_id, 0))
    assert trace_a.protocol is not None
    assert trace_a.protocol.reference_point_id == b.point_id
    texts = [o.text for o in trace_a.outputs if o.text]
    assert texts == [b.reply_text]
    recall = next(p for p in points if p.kind is PointKind.FACT_RECALL)
    trace_r, _ = read_rollout(rollout_dir(run, "person", recall.point_id, 0))
    assert [o.text for o in trace_r.outputs if o.text] == ["The answer is Paris."]


def test_a_rerun_keeps_finished_rollouts_and_changes_nothing(workdir: Path) -> None:
    settings = RunSettings("resume")
    run_rollouts(workdir, cards("person"), settings)
    run = runs_dir(workdir) / "resume"
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    assert len(before) == 1 + 4 * 3  # run.json, and each of 4 rollouts' three files
    tallies = run_rollouts(workdir, cards("person"), settings)
    assert (tallies["person"].done, tallies["person"].kept) == (0, 4)
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before


def test_more_rollouts_and_more_systems_join_the_same_run(workdir: Path) -> None:
    run_rollouts(workdir, cards("never-speak"), RunSettings("grow"))
    tallies = run_rollouts(workdir, cards("never-speak", "person"), RunSettings("grow", rollouts=2))
    assert (tallies["never-speak"].kept, tallies["never-speak"].done) == (4, 4)
    assert tallies["person"].done == 8
    record = io.read_json(runs_dir(workdir) / "grow" / RUN_FILE)
    assert sorted(record["systems"]) == ["never-speak", "person"]
    assert record["rollouts"] == 2
    assert record["systems"]["person"]["clock"] == "virtual"
    assert record["protocol"]["cap_s"] == 30.0


def test_a_run_cannot_be_resumed_with_other_settings(workdir: Path) -> None:
    run_rollouts(workdir, cards("never-speak"), RunSettings("strict"))
    with pytest.raises(PmcError, match="another seed"):
        run_rollouts(workdir, cards("never-speak"), RunSettings("strict", seed=7))
    changed = SystemCard("never-speak", "never-speak", Family.LOCAL, concurrency=3)
    with pytest.raises(PmcError, match="system never-speak has changed"):
        run_rollouts(workdir, [changed], RunSettings("strict"))


def test_transport_failures_are_retried_reported_and_retried_on_resume(workdir: Path) -> None:
    card = SystemCard("flaky", "scripted", Family.LOCAL, params={"say": []})
    run = runs_dir(workdir) / "flaky-run"
    # Every point's first attempt, then the first retry to come back: a retry waits its backoff
    # holding no slot, so the others' first attempts come before it.
    ScriptedSystem.refuse = 5
    fast = Backoff(base_s=0.01, cap_s=0.01)
    try:
        tallies = run_rollouts(workdir, [card], RunSettings("flaky-run", retries=1, backoff=fast))
    finally:
        ScriptedSystem.refuse = 0
    assert (tallies["flaky"].done, tallies["flaky"].failed) == (3, 1)
    assert tallies["flaky"].causes == {"transport: connection refused (scripted)": 1}
    errors = list(run.rglob(ERROR_FILE))
    assert len(errors) == 1
    assert io.read_json(errors[0])["attempts"] == ["transport: connection refused (scripted)"] * 2
    assert not (errors[0].parent / TRACE_FILE).exists()

    tallies = run_rollouts(workdir, [card], RunSettings("flaky-run"))
    assert (tallies["flaky"].done, tallies["flaky"].kept, tallies["flaky"].failed) == (1, 3, 0)
    assert not list(run.rglob(ERROR_FILE))
    assert len(list(run.rglob(TRACE_FILE))) == 4


def test_virtual_clock_runs_are_byte_identical(workdir: Path) -> None:
    names = ("always-speak", "shuffled-person")
    run_rollouts(workdir, cards(*names), RunSettings("same-1"))
    run_rollouts(workdir, cards(*names), RunSettings("same-2"))
    one, two = runs_dir(workdir) / "same-1" / "rollouts", runs_dir(workdir) / "same-2" / "rollouts"
    files = sorted(p.relative_to(one) for p in one.rglob("*") if p.is_file())
    assert len(files) == 2 * 4 * 3
    for rel in files:
        assert (one / rel).read_bytes() == (two / rel).read_bytes(), rel


def test_remote_systems_refuse_the_virtual_clock(workdir: Path) -> None:
    hosted = SystemCard("h", "scripted", Family.HOSTED)
    with pytest.raises(PmcError, match="needs the real clock"):
        run_rollouts(workdir, [hosted], RunSettings("v", clock=ClockKind.VIRTUAL))


STEP_S = 0.02
"""Frames, the speech monitor's windows and :func:`first_loud_s`'s windows are all 20 ms."""
CLOCKS_CAP_S = 12.0
"""The clocks' comparison's cap on a reply: past every other stop at its turn ends and recall
(a silent system is stopped 8 s after the boundary, every reply ends before that; pauses have
no cap), so only always-speak reaches it, as it reaches the paper's 30 s, without streaming
18 s more in real time."""
HELD_S = 0.02
"""A process held off the processor for less than a 20 ms frame may miss every frame deadline
and leave no trace in the input lateness; a longer hold makes a frame late by all but this."""


def slack_s(trace: RolloutTrace) -> float:
    """How much later than its virtual twin a real-clock rollout may rightly stamp its output.

    A process held off the processor stamps what its system says late by as long as it was
    held: at most its measured input lateness plus :data:`HELD_S`. A cascade whose computation
    outran its set reply latency also replies late by the overrun it signals.
    """
    overrun_ms = max(
        (float(o.detail.get("reply_late_ms", 0.0)) for o in trace.outputs), default=0.0
    )
    return HELD_S + (trace.audit.lateness_max_ms + overrun_ms) / 1000


@pytest.mark.slow
def test_real_and_virtual_clocks_give_the_same_outcomes(workdir: Path, points: list[Point]) -> None:
    names = ("never-speak", "always-speak", "person", "shuffled-person", "endpointer-300")
    params = ProtocolParams(cap_s=CLOCKS_CAP_S)
    run_rollouts(
        workdir, cards(*names), RunSettings("virtual", clock=ClockKind.VIRTUAL, params=params)
    )
    tallies = run_rollouts(
        workdir, cards(*names), RunSettings("real", clock=ClockKind.REAL, params=params)
    )
    assert sum(t.done for t in tallies.values()) == len(names) * len(points)
    virtual, real = runs_dir(workdir) / "virtual", runs_dir(workdir) / "real"
    # Every rollout is compared, a late one (marked so in its trace and tallied) within bounds
    # widened by what it measured of its own lateness, so a loaded machine cannot fail this.
    late = 0
    for system in names:
        for p in points:
            trace = read_rollout(rollout_dir(real, system, p.point_id, 0))[0]
            late += trace.audit.late
            slack = slack_s(trace)
            v_reason, v_stop, v_onset = outcome(virtual, system, p)
            r_reason, r_stop, r_onset = outcome(real, system, p)
            where = f"{system} at {p.point_id} (slack {slack:.3f} s)"
            assert r_reason is v_reason, where
            # A shift by the slack moves an onset by up to one more of first_loud_s's windows,
            # and a stop by up to one more of the monitor's windows and one more frame deadline.
            assert r_stop == pytest.approx(v_stop, abs=slack + 2 * STEP_S), where
            assert (r_onset is None) == (v_onset is None), where
            if v_onset is not None and r_onset is not None:
                assert r_onset == pytest.approx(v_onset, abs=slack + STEP_S), where
    assert sum(t.late for t in tallies.values()) == late


def rollout_files(run: Path) -> dict[str, bytes]:
    """Every file under a run's rollouts, by its path there."""
    base = run / "rollouts"
    return {str(p.relative_to(base)): p.read_bytes() for p in base.rglob("*") if p.is_file()}


def temporaries(run: Path) -> list[Path]:
    """Temporary files anywhere in a run (``atomic_open`` names them ``.<name>.<random>.tmp``)."""
    return sorted(run.rglob(".*.tmp"))


def test_a_rollout_a_crash_left_half_written_is_redone_and_its_temporaries_removed(
    workdir: Path, points: list[Point]
) -> None:
    clean = runs_dir(workdir) / "crash-clean"
    run_rollouts(workdir, cards("person"), RunSettings("crash-clean"))
    expected = rollout_files(clean)
    run_rollouts(workdir, cards("person"), RunSettings("crashed"))
    run = runs_dir(workdir) / "crashed"
    # As a kill leaves them: one rollout killed while writing its trace (played.flac and
    # output.wav written, trace.json half written under its temporary name); one killed while
    # writing its first file; and run.json's temporary from a kill while it was being written.
    mid_trace = rollout_dir(run, "person", points[0].point_id, 0)
    trace = (mid_trace / TRACE_FILE).read_bytes()
    (mid_trace / TRACE_FILE).unlink()
    (mid_trace / f".{TRACE_FILE}.k1ll3d.tmp").write_bytes(trace[: len(trace) // 2])
    first_file = rollout_dir(run, "person", points[1].point_id, 0)
    played = (first_file / "played.flac").read_bytes()
    for name in (TRACE_FILE, "played.flac", "output.wav"):
        (first_file / name).unlink()
    (first_file / ".played.flac.k1ll3d.tmp").write_bytes(played[:1000])
    (run / f".{RUN_FILE}.k1ll3d.tmp").write_text('{"schema_ver', encoding="utf-8")

    tallies = run_rollouts(workdir, cards("person"), RunSettings("crashed"))
    assert (tallies["person"].done, tallies["person"].kept) == (2, 2)
    assert temporaries(run) == []
    assert rollout_files(run) == expected


class Crash(Exception):
    """Stands for the process dying: nothing in the harness catches it."""


@pytest.mark.parametrize("fatal", [1, 2, 3, 5])
def test_a_crash_between_a_rollouts_files_never_leaves_it_looking_done(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, fatal: int
) -> None:
    clean = runs_dir(workdir) / "crash-clean"
    run_rollouts(workdir, cards("person"), RunSettings("crash-clean"))
    expected = rollout_files(clean)
    real_atomic_open = io.atomic_open
    opened: list[Path] = []

    def dying_atomic_open(path: Path, mode: str = "w") -> Any:
        if "rollouts" in path.parts:
            opened.append(path)
            if len(opened) == fatal:  # the fatal-th file of the run is never written
                raise Crash(path.name)
        return real_atomic_open(path, mode)

    run_id = f"crash-at-{fatal}"
    run = runs_dir(workdir) / run_id
    with monkeypatch.context() as patch:
        patch.setattr(io, "atomic_open", dying_atomic_open)
        with pytest.raises(Crash):
            run_rollouts(workdir, cards("person"), RunSettings(run_id))
    # Three files a rollout, trace.json last: no rollout looks done unless it is.
    folders = {p.parent for p in opened}
    for folder in folders:
        if (folder / TRACE_FILE).exists():
            assert sorted(p.name for p in folder.iterdir()) == [
                "output.wav",
                "played.flac",
                TRACE_FILE,
            ]
    done = sum((folder / TRACE_FILE).exists() for folder in folders)
    assert done == (fatal - 1) // 3
    tallies = run_rollouts(workdir, cards("person"), RunSettings(run_id))
    assert (tallies["person"].kept, tallies["person"].done) == (done, 4 - done)
    assert temporaries(run) == []
    assert rollout_files(run) == expected
