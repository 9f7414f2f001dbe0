"""A run under conditions: what the system hears changes as set, recorded and repeatable.

Never-speak (it only listens) runs on the virtual clock at the points of two conversations, so
babble has another conversation to take voices from. What it heard is the rollout's
``heard.flac``; the clean live stream is the point's own cut.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner

import pmc.testing.systems  # noqa: F401 - registers the scripted adapter
from pmc import io
from pmc.audio import SAMPLE_RATE
from pmc.cli import cli
from pmc.conditions import Concealment, Network, parse_conditions, snr_db
from pmc.errors import PmcError
from pmc.harness import (
    HEARD_FILE,
    PLAYED_FILE,
    Run,
    RunSettings,
    condition_seed,
    default_run_id,
    live_for,
    run_rollouts,
    runs_dir,
)
from pmc.points import MANIFEST_FILE, Point, read_points
from pmc.systems import Family, SystemCard, bundled_cards, find_card
from pmc.testing.points import write_points

NEVER = find_card("never-speak", bundled_cards())


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four points of each of two conversations in one working directory."""
    folder = tmp_path_factory.mktemp("conditions")
    points = write_points(folder, "conv-1") + write_points(folder, "conv-2")
    with io.atomic_open(folder / "points" / MANIFEST_FILE) as handle:
        for p in points:
            handle.write(io.json_line(p.to_dict()))
    return folder


def _run(workdir: Path, run_id: str, condition: str) -> Run:
    settings = RunSettings(run_id, conditions=parse_conditions(condition, seed=3))
    tallies = run_rollouts(workdir, [NEVER], settings)
    assert tallies[NEVER.name].failed == 0
    return Run(runs_dir(workdir) / run_id)


def _heard(run: Run, point: Point) -> np.ndarray:
    track, rate = sf.read(run.rollout_dir(NEVER.name, point.point_id, 0) / HEARD_FILE)
    assert rate == SAMPLE_RATE
    return np.asarray(track, dtype=np.float32)


@pytest.mark.parametrize("snr", [10.0, 0.0])
def test_babble_reaches_the_system_at_the_set_snr_and_reruns_are_byte_identical(
    workdir: Path, snr: float
) -> None:
    name = f"babble-10db:snr_db={snr:g}"
    run, again = _run(workdir, f"b{snr:g}", name), _run(workdir, f"b{snr:g}-again", name)
    record = io.read_json(run.record_path)
    assert [c["name"] for c in record["conditions"]] == ["babble-10db"]
    assert record["conditions"][0]["params"]["snr_db"] == snr
    points = read_points(workdir)
    for point in points:
        folder = run.rollout_dir(NEVER.name, point.point_id, 0)
        twin = again.rollout_dir(NEVER.name, point.point_id, 0)
        for name_ in (HEARD_FILE, PLAYED_FILE, "trace.json"):
            assert (folder / name_).read_bytes() == (twin / name_).read_bytes(), name_
        clean = live_for(workdir / "points", point)
        heard = _heard(run, point)[: len(clean)]
        # PCM16 on both sides: the noise is what the system heard less the clean stream.
        assert snr_db(clean, heard - clean, SAMPLE_RATE) == pytest.approx(snr, abs=0.2)
    # Each rollout hears a noise of its own (drawn from its identity and the condition's seed).
    first, second = (_heard(run, p) for p in points[:2])
    assert not np.array_equal(first[: len(second)], second[: len(first)])


def test_the_telephone_leaves_nothing_above_4_khz_but_leakage_under_the_codec_floor(
    workdir: Path,
) -> None:
    run = _run(workdir, "phone", "telephone")
    for point in read_points(workdir):
        heard = _heard(run, point)
        inside = _per_hz(heard, 300.0, 3400.0)
        floor = max(_per_hz(heard, 20.0, 250.0), _per_hz(heard, 3600.0, 4000.0))
        assert floor < inside / 100  # the band was cut: only codec noise left outside it
        assert _per_hz(heard, 4000.0, SAMPLE_RATE / 2) < floor / 4, point.point_id


def _per_hz(track: np.ndarray, low: float, high: float) -> float:
    """Power per Hz of ``track`` between ``low`` and ``high``."""
    spectrum = np.abs(np.fft.rfft(track.astype(np.float64))) ** 2
    freqs = np.fft.rfftfreq(len(track), 1 / SAMPLE_RATE)
    return float(spectrum[(freqs >= low) & (freqs < high)].sum() / (high - low))


def test_a_run_under_conditions_has_its_own_id_and_resumes_only_under_the_same(
    workdir: Path,
) -> None:
    conditions = parse_conditions("room-10db")
    plain, noisy = default_run_id(workdir), default_run_id(workdir, conditions=conditions)
    assert noisy.startswith(plain + "-room-10db-")
    assert default_run_id(workdir, conditions=parse_conditions("room-10db:snr_db=5")) != noisy
    room = _run(workdir, "room", "room-10db")
    # The room does not fall silent when the person does: its noise runs on, as loud, in the
    # frames after the live stream.
    for point in read_points(workdir):
        clean = live_for(workdir / "points", point)
        heard = _heard(room, point)
        during = np.mean((heard[: len(clean)] - clean).astype(np.float64) ** 2)
        after = np.mean(heard[len(clean) :].astype(np.float64) ** 2)
        assert len(heard) - len(clean) > SAMPLE_RATE  # a second and more of it
        assert 10 * np.log10(after / during) == pytest.approx(0.0, abs=0.5), point.point_id
    with pytest.raises(PmcError, match="another conditions"):
        _run(workdir, "room", "car-10db")
    with pytest.raises(PmcError, match="one network path at most"):
        _run(workdir, "nets", "network,network:loss=0.1")
    with pytest.raises(PmcError, match="one echo path at most"):
        _run(workdir, "echoes", "echo,echo:delay_ms=50")


def test_the_command_names_an_unknown_condition_without_a_traceback(workdir: Path) -> None:
    args = ["run", "--workdir", str(workdir), "--system", "never-speak", "--condition", "fog"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code != 0
    assert "unknown condition 'fog'" in result.output and "Traceback" not in result.output


ECHOING = SystemCard(
    "tone-at-half-a-second",
    "scripted",
    Family.LOCAL,
    params={"say": [{"at_s": 0.5, "seconds": 1.0, "rms": 0.1}]},
)
"""Says a 1 s tone from 0.5 s into every stream (pmc.testing.systems)."""


def test_the_echo_comes_back_at_the_set_delay_and_level_to_the_sample(workdir: Path) -> None:
    settings = RunSettings("echo-run", conditions=parse_conditions("echo:gain_db=-10"))
    tallies = run_rollouts(workdir, [ECHOING], settings)
    assert tallies[ECHOING.name].failed == 0
    run = Run(runs_dir(workdir) / "echo-run")
    delay = round(0.1 * SAMPLE_RATE)  # the preset's 100 ms
    for point in read_points(workdir):
        folder = run.rollout_dir(ECHOING.name, point.point_id, 0)
        heard = np.asarray(sf.read(folder / HEARD_FILE)[0], dtype=np.float64)
        played = np.asarray(sf.read(folder / PLAYED_FILE)[0], dtype=np.float64)
        clean = live_for(workdir / "points", point).astype(np.float64)
        echo = heard.copy()
        echo[: len(clean)] -= clean
        expected = np.zeros_like(echo)
        n = min(len(echo), len(played) + delay) - delay
        expected[delay : delay + n] = 10 ** (-10 / 20) * played[:n]
        # To the sample: what is left is the two files' PCM16 rounding, and no more.
        assert np.abs(echo - expected).max() <= 2.5 / 32767, point.point_id
        assert played.any() and not echo[:delay].any()  # nothing comes back before the delay
        level = 10 * np.log10(np.sum(echo**2) / np.sum(played[:n] ** 2))
        assert level == pytest.approx(-10.0, abs=0.1), point.point_id


def test_the_network_delays_and_loses_exactly_the_frames_its_seed_draws(workdir: Path) -> None:
    (condition,) = parse_conditions("network:loss=0.2:concealment=repeat", seed=3)
    settings = RunSettings("net-run", conditions=(condition,))
    assert run_rollouts(workdir, [NEVER], settings)[NEVER.name].failed == 0
    run = Run(runs_dir(workdir) / "net-run")
    frame_ns = NEVER.frame_samples * 1_000_000_000 // NEVER.sample_rate
    size = NEVER.frame_samples
    lost_seen = 0
    for point in read_points(workdir):
        folder = run.rollout_dir(NEVER.name, point.point_id, 0)
        trace = io.read_json(folder / "trace.json")
        seed = condition_seed(condition, point.point_id, 0)
        network = Network(30.0, 0.2, Concealment.REPEAT, seed)
        fates = network.schedule(len(trace["inputs"]), frame_ns)
        t0 = int(trace["t0_ns"])
        # Each frame went out at its deadline plus exactly the delay drawn for it.
        for (i, deadline, sent), fate in zip(trace["inputs"], fates, strict=True):
            assert deadline - t0 == (i + 1) * frame_ns + fate.delay_ns and sent == deadline
        # A lost frame is the last one that arrived, again; every other is the stream's own.
        heard = _heard(run, point)
        clean = live_for(workdir / "points", point)
        last = None
        for fate in fates[: len(clean) // size]:
            frame = heard[fate.index * size : (fate.index + 1) * size]
            if fate.lost:
                lost_seen += 1
                expected = np.zeros(size, dtype=np.float32) if last is None else last
            else:
                expected = clean[fate.index * size : (fate.index + 1) * size]
                last = expected
            assert np.abs(frame - expected).max() <= 1 / 32767, (point.point_id, fate)
    assert lost_seen >= 10
