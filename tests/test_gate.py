import json
import time

import numpy as np
import numpy.typing as npt
import pytest

from pmc.audio import SAMPLE_RATE
from pmc.gate import (
    GateParams,
    Interval,
    OnsetRule,
    speech_intervals,
    speech_ratio,
    window_rms,
)

Audio = npt.NDArray[np.float32]

# 200 Hz has a period of 120 samples at 24 kHz and 80 at 16 kHz, so every 20 ms window holds
# whole periods and a window-aligned burst's window RMS is exactly amplitude / sqrt(2).
_FREQ = 200.0


def _track(
    seconds: float,
    bursts: list[tuple[float, float, float]],
    rate: int = SAMPLE_RATE,
    noise_rms: float = 0.0,
) -> Audio:
    """Silence (or low noise) with sine bursts given as (start_s, end_s, rms)."""
    n = round(seconds * rate)
    out = np.zeros(n, dtype=np.float64)
    if noise_rms:
        out += np.random.default_rng(0).normal(0.0, noise_rms, n)
    t = np.arange(n) / rate
    for start, end, rms in bursts:
        a, b = round(start * rate), round(end * rate)
        out[a:b] += rms * np.sqrt(2) * np.sin(2 * np.pi * _FREQ * t[a:b])
    return out.astype(np.float32)


def _times(intervals: list[Interval]) -> list[tuple[float, float]]:
    return [(i.start_s, i.end_s) for i in intervals]


def test_window_aligned_bursts_give_exact_times() -> None:
    audio = _track(2.0, [(0.2, 0.5, 0.1), (1.0, 1.3, 0.05)])
    assert _times(speech_intervals(audio)) == [(0.2, 0.5), (1.0, 1.3)]


def test_window_rms_counts_the_partial_tail_over_its_own_samples() -> None:
    # 50 ms: two full windows of silence, then a 10 ms tail of constant 0.3.
    audio = np.zeros(1200, dtype=np.float32)
    audio[960:] = 0.3
    rms = window_rms(audio)
    assert rms.shape == (3,)
    assert rms[:2].tolist() == [0.0, 0.0]
    assert rms[2] == pytest.approx(0.3, rel=1e-6)


def test_burst_reaching_past_the_end_is_clipped_to_the_audio() -> None:
    # 1.01 s of audio: the last window is 10 ms long, and the burst runs to the end.
    audio = _track(1.01, [(0.6, 1.01, 0.1)])
    assert _times(speech_intervals(audio)) == [(0.6, 1.01)]


def test_low_noise_never_gates() -> None:
    audio = _track(3.0, [], noise_rms=0.002)
    assert speech_intervals(audio) == []
    assert speech_ratio(audio) == 0.0


def test_release_level_alone_never_opens() -> None:
    audio = _track(2.0, [(0.4, 1.4, 0.008)])
    assert float(window_rms(audio)[30]) == pytest.approx(0.008, rel=1e-4)
    assert speech_intervals(audio) == []


def test_release_level_after_a_loud_burst_holds_the_gate_open() -> None:
    audio = _track(2.0, [(0.2, 0.4, 0.1), (0.4, 0.9, 0.008)])
    assert _times(speech_intervals(audio)) == [(0.2, 0.9)]


def test_release_level_before_a_loud_burst_is_not_speech() -> None:
    # The gate opens on the loud window, not at the start of the quiet lead-in.
    audio = _track(2.0, [(0.2, 0.6, 0.008), (0.6, 0.8, 0.1)])
    assert _times(speech_intervals(audio)) == [(0.6, 0.8)]


def test_below_release_closes_the_gate() -> None:
    audio = _track(2.0, [(0.2, 0.4, 0.1), (0.4, 0.9, 0.004)])
    assert _times(speech_intervals(audio)) == [(0.2, 0.4)]


def test_release_level_after_a_close_does_not_reopen() -> None:
    # The reference implementation re-opens here (its quirk); a closed gate needs 0.01 again.
    audio = _track(2.0, [(0.2, 0.4, 0.1), (0.5, 0.9, 0.008)])
    assert _times(speech_intervals(audio)) == [(0.2, 0.4)]
    # Even a gap short enough to bridge does not let the quiet stretch in.
    audio = _track(2.0, [(0.2, 0.4, 0.1), (0.42, 0.9, 0.008)])
    assert _times(speech_intervals(audio)) == [(0.2, 0.4)]
    # A loud window after the close opens it again, and the release level then holds it.
    audio = _track(2.0, [(0.2, 0.4, 0.1), (0.5, 0.6, 0.008), (0.6, 0.64, 0.1), (0.64, 0.9, 0.008)])
    assert _times(speech_intervals(audio)) == [(0.2, 0.4), (0.6, 0.9)]


@pytest.mark.parametrize(
    ("bursts", "expected"),
    [
        # A 30 ms gap (0.45-0.48) leaves one silent window: bridged.
        ([(0.2, 0.45, 0.1), (0.48, 0.7, 0.1)], [(0.2, 0.7)]),
        # Exactly 40 ms: bridged.
        ([(0.2, 0.44, 0.1), (0.48, 0.7, 0.1)], [(0.2, 0.7)]),
        # 60 ms: not bridged.
        ([(0.2, 0.44, 0.1), (0.5, 0.7, 0.1)], [(0.2, 0.44), (0.5, 0.7)]),
    ],
    ids=["30ms", "40ms", "60ms"],
)
def test_gap_bridging(
    bursts: list[tuple[float, float, float]], expected: list[tuple[float, float]]
) -> None:
    assert _times(speech_intervals(_track(2.0, bursts))) == expected


def test_short_burst_dropped_long_burst_kept() -> None:
    audio = _track(2.0, [(0.2, 0.26, 0.1), (1.0, 1.1, 0.1)])
    assert _times(speech_intervals(audio)) == [(1.0, 1.1)]
    # The 80 ms limit itself is kept (drops are strictly shorter).
    audio = _track(2.0, [(0.2, 0.28, 0.1)])
    assert _times(speech_intervals(audio)) == [(0.2, 0.28)]


def test_bridging_happens_before_dropping() -> None:
    audio = _track(2.0, [(0.5, 0.56, 0.1), (0.58, 0.64, 0.1)])
    intervals = speech_intervals(audio)
    assert _times(intervals) == [(0.5, 0.64)]
    assert intervals[0].duration_s == pytest.approx(0.14)


def test_speech_ratio_of_known_signals() -> None:
    assert speech_ratio(_track(4.0, [(1.0, 2.0, 0.1)])) == pytest.approx(0.25)
    assert speech_ratio(_track(2.0, [(0.0, 2.0, 0.1)])) == pytest.approx(1.0)
    assert speech_ratio(_track(2.0, [(0.2, 0.4, 0.1), (1.0, 1.3, 0.1)])) == pytest.approx(0.25)
    # A dropped burst and a never-opening quiet stretch count for nothing.
    assert speech_ratio(_track(2.0, [(0.2, 0.26, 0.1), (1.0, 1.5, 0.008)])) == 0.0


def test_empty_audio() -> None:
    empty = np.zeros(0, dtype=np.float32)
    assert speech_intervals(empty) == []
    assert speech_ratio(empty) == 0.0
    assert window_rms(empty).shape == (0,)


def test_params_round_trip_and_defaults() -> None:
    params = GateParams()
    data = params.to_dict()
    assert data == {
        "window_s": 0.02,
        "open_rms": 0.01,
        "release_ratio": 0.5,
        "bridge_s": 0.04,
        "min_s": 0.08,
    }
    assert params.release_rms == pytest.approx(0.005)
    assert GateParams.from_dict(json.loads(json.dumps(data))) == params
    custom = GateParams(window_s=0.01, open_rms=0.02, release_ratio=0.25, bridge_s=0.1, min_s=0.2)
    assert GateParams.from_dict(custom.to_dict()) == custom
    assert GateParams.from_dict({"open_rms": 0.03}).open_rms == 0.03
    with pytest.raises(ValueError, match="release_ratio"):
        GateParams(release_ratio=1.5)
    with pytest.raises(ValueError, match="window_s"):
        GateParams(window_s=0.0)


def test_custom_params_change_the_gate() -> None:
    audio = _track(2.0, [(0.2, 0.4, 0.008), (1.0, 1.06, 0.1)])
    assert _times(speech_intervals(audio, GateParams(open_rms=0.005, min_s=0.05))) == [
        (0.2, 0.4),
        (1.0, 1.06),
    ]


def test_non_default_sample_rate() -> None:
    rate = 16_000  # 320-sample windows
    audio = _track(2.0, [(0.2, 0.5, 0.1), (0.52, 0.6, 0.1), (1.0, 1.06, 0.1)], rate=rate)
    assert len(window_rms(audio, sample_rate=rate)) == 100
    intervals = speech_intervals(audio, sample_rate=rate)
    assert _times(intervals) == [(0.2, 0.6)]
    assert speech_ratio(audio, sample_rate=rate) == pytest.approx(0.2)
    # The same bursts at 24 kHz gate at the same times.
    same = _track(2.0, [(0.2, 0.5, 0.1), (0.52, 0.6, 0.1), (1.0, 1.06, 0.1)])
    assert speech_intervals(same) == intervals


def test_rejects_multichannel_audio() -> None:
    with pytest.raises(ValueError, match="mono"):
        speech_intervals(np.zeros((100, 2), dtype=np.float32))


def _ten_minutes() -> Audio:
    bursts = [(float(s), float(s) + 1.0, 0.1) for s in range(0, 600, 3)]
    return _track(600.0, bursts, noise_rms=0.001)


def test_ten_minutes_gate_whole() -> None:
    audio = _ten_minutes()
    intervals = speech_intervals(audio)
    assert len(intervals) == 200
    assert intervals[1].start_s == pytest.approx(3.0)
    refined = speech_intervals(audio, onset=OnsetRule.ENVELOPE)
    assert [i.end_s for i in refined] == [i.end_s for i in intervals]
    assert refined[1].start_s == pytest.approx(3.0, abs=3e-4)


@pytest.mark.benchmark
def test_ten_minutes_gate_in_well_under_a_second() -> None:
    """A speed target (0.11-0.14 s seen on two busy cores), so a benchmark, not a suite test."""
    audio = _ten_minutes()
    for onset in OnsetRule:
        started = time.perf_counter()
        speech_intervals(audio, onset=onset)
        assert time.perf_counter() - started < 0.5, onset


def _loop_gate(rms: list[float], width: int, n: int, params: GateParams) -> list[tuple[int, int]]:
    """A plain window-by-window version of the gate, in samples, to check the vectorised one."""
    spans: list[tuple[int, int]] = []
    start: int | None = None
    for i, value in enumerate(rms):
        if start is None and value >= params.open_rms:
            start = i
        elif start is not None and value < params.release_rms:
            spans.append((start * width, i * width))
            start = None
    if start is not None:
        spans.append((start * width, len(rms) * width))
    spans = [(a, min(b, n)) for a, b in spans]
    merged: list[tuple[int, int]] = []
    for a, b in spans:
        if merged and a - merged[-1][1] <= round(params.bridge_s * SAMPLE_RATE):
            merged[-1] = (merged[-1][0], b)
        else:
            merged.append((a, b))
    return [(a, b) for a, b in merged if b - a >= round(params.min_s * SAMPLE_RATE)]


@pytest.mark.parametrize("seed", range(5))
def test_matches_a_window_by_window_loop(seed: int) -> None:
    rng = np.random.default_rng(seed)
    # Per-window levels spread around both thresholds, with a ragged tail.
    levels = rng.choice([0.0, 0.003, 0.006, 0.008, 0.012, 0.1], size=400)
    audio = np.repeat(levels, 480)[:-123].astype(np.float32)
    audio *= np.where(np.arange(audio.size) % 2 == 0, 1.0, -1.0).astype(np.float32)
    params = GateParams()
    rms = window_rms(audio).tolist()
    expected = _loop_gate(rms, 480, audio.size, params)
    got = [
        (round(i.start_s * SAMPLE_RATE), round(i.end_s * SAMPLE_RATE))
        for i in speech_intervals(audio, params)
    ]
    assert len(expected) > 3
    assert got == expected
    covered = sum(b - a for a, b in expected)
    assert speech_ratio(audio, params) == pytest.approx(covered / audio.size)


def _onset_track(start: int, rms: float, hz: float, phase: float) -> Audio:
    """One second of silence, then half a second of a tone from sample ``start`` (sharp)."""
    out = np.zeros(SAMPLE_RATE * 2, dtype=np.float64)
    t = np.arange(SAMPLE_RATE // 2) / SAMPLE_RATE
    out[start : start + len(t)] = rms * np.sqrt(2) * np.sin(2 * np.pi * hz * t + phase)
    return out.astype(np.float32)


def test_envelope_onsets_land_on_the_first_sample_of_speech_not_on_the_window_grid() -> None:
    rng = np.random.default_rng(14)
    envelope, window = [], []
    for _ in range(300):
        start = int(rng.integers(SAMPLE_RATE, SAMPLE_RATE + 480))  # anywhere inside a window
        audio = _onset_track(
            start, rng.uniform(0.012, 0.3), rng.uniform(80, 400), rng.uniform(0, 6.3)
        )
        (refined,) = speech_intervals(audio, onset=OnsetRule.ENVELOPE)
        (grid,) = speech_intervals(audio)
        envelope.append(round(refined.start_s * SAMPLE_RATE) - start)
        window.append(round(grid.start_s * SAMPLE_RATE) - start)
        # Only the start moves; the gate's own decisions (the end) stay.
        assert refined.end_s == grid.end_s
    # Never early, and late by at most the 2 ms envelope (reached only just above the
    # threshold); the window grid errs by up to a window either way.
    assert min(envelope) >= 0
    assert max(envelope) <= 0.002 * SAMPLE_RATE
    assert np.median(envelope) <= 0.0002 * SAMPLE_RATE
    assert min(window) < -0.015 * SAMPLE_RATE and max(window) > 0.002 * SAMPLE_RATE


def test_a_window_holding_only_the_first_ms_of_speech_is_searched_too() -> None:
    # Speech starting 1.5 ms before a window's end: that window's RMS is below the threshold, so
    # the gate opens on the next window; the refined onset goes back to the speech's start.
    start = SAMPLE_RATE + 480 - 36
    audio = _onset_track(start, 0.03, 200.0, 0.0)
    (grid,) = speech_intervals(audio)
    assert grid.start_s == pytest.approx((SAMPLE_RATE + 480) / SAMPLE_RATE)
    (refined,) = speech_intervals(audio, onset=OnsetRule.ENVELOPE)
    assert 0 <= round(refined.start_s * SAMPLE_RATE) - start <= 24  # a millisecond


def test_envelope_onsets_keep_the_same_intervals_and_never_reach_back_past_the_previous() -> None:
    bursts = [(0.2, 0.4, 0.1), (0.43, 0.7, 0.1), (1.013, 1.3, 0.05)]
    audio = _track(2.0, bursts)
    grid = speech_intervals(audio)
    refined = speech_intervals(audio, onset=OnsetRule.ENVELOPE)
    assert len(refined) == len(grid) == 2  # the first two bridged into one, as before
    assert [i.end_s for i in refined] == [i.end_s for i in grid]
    assert refined[0].start_s == pytest.approx(0.2, abs=3e-4)
    assert refined[1].start_s == pytest.approx(1.013, abs=3e-4)
    # A click in the window before, with silence between it and the speech, is not its start.
    audio[round(0.99 * SAMPLE_RATE)] = 0.2  # its window stays under the gate
    assert speech_intervals(audio, onset=OnsetRule.ENVELOPE)[1].start_s == refined[1].start_s
