"""Each condition does to a track exactly what its setting says, measured on the result."""

from __future__ import annotations

import numpy as np
import pytest

from pmc.audio import FloatArray
from pmc.conditions import (
    LINE_RATE,
    PRESETS,
    Concealment,
    Condition,
    ConditionKind,
    Echo,
    NoiseColour,
    babble,
    coloured_noise,
    conceal,
    deliveries,
    mix_at_snr,
    parse_conditions,
    snr_db,
    speech_power,
    telephone,
)
from pmc.errors import PmcError

RATE = 24_000


def talk(seconds: float, seed: int) -> FloatArray:
    """Speech-like: bursts of harmonic sound with pauses between, about -20 dBFS when on."""
    rng = np.random.default_rng(seed)
    t = np.arange(round(seconds * RATE)) / RATE
    pitch = 120.0 + 40.0 * rng.random()
    voiced = sum(np.sin(2 * np.pi * k * pitch * t) / k for k in range(1, 12))
    on = (np.sin(2 * np.pi * 0.7 * t + rng.random()) > -0.2).astype(np.float64)
    return np.asarray(0.05 * voiced * on, dtype=np.float32)


def band_power(audio: FloatArray, low: float, high: float) -> float:
    spectrum = np.abs(np.fft.rfft(audio.astype(np.float64))) ** 2
    freqs = np.fft.rfftfreq(len(audio), 1 / RATE)
    return float(spectrum[(freqs >= low) & (freqs < high)].sum())


def test_presets_parse_with_parameters_changed_and_round_trip() -> None:
    (babble_0,) = parse_conditions("babble-10db:snr_db=0", seed=7)
    assert (babble_0.kind, babble_0.params["snr_db"], babble_0.seed) == (
        ConditionKind.BABBLE,
        0.0,
        7,
    )
    assert babble_0.params["voices"] == 4 and isinstance(babble_0.params["voices"], int)
    both = parse_conditions("telephone, echo:delay_ms=250")
    assert [c.name for c in both] == ["telephone", "echo"] and both[1].number("delay_ms") == 250.0
    for name in PRESETS:
        (condition,) = parse_conditions(name)
        assert Condition.from_dict(condition.to_dict()) == condition
    with pytest.raises(PmcError, match="unknown condition 'fog'"):
        parse_conditions("fog")
    with pytest.raises(PmcError, match="'level=3' is not KEY=VALUE"):
        parse_conditions("echo:level=3")
    with pytest.raises(PmcError, match="snr_db must be a number"):
        parse_conditions("babble-0db:snr_db=loud")


@pytest.mark.parametrize("snr", [10.0, 0.0])
@pytest.mark.parametrize("colour", list(NoiseColour))
def test_noise_is_mixed_at_the_set_snr_on_the_speech(colour: NoiseColour, snr: float) -> None:
    speech = talk(6.0, seed=1)
    noise = coloured_noise(colour, len(speech), np.random.default_rng(3))
    mixed = mix_at_snr(speech, noise, snr, RATE)
    assert snr_db(speech, mixed - speech, RATE) == pytest.approx(snr, abs=0.2)
    # On the speech, not the whole track: against the track's mean power (half of it silence)
    # the same noise would read lower.
    whole = 10 * np.log10(np.mean(speech.astype(np.float64) ** 2) / np.mean((mixed - speech) ** 2))
    assert whole < snr - 1.0


def test_room_noise_falls_3_db_and_car_noise_6_db_an_octave() -> None:
    rng = np.random.default_rng(0)
    for colour, slope in ((NoiseColour.ROOM, 3.0), (NoiseColour.CAR, 6.0)):
        noise = coloured_noise(colour, 20 * RATE, rng)
        per_octave = [
            10 * np.log10(band_power(noise, f, 2 * f) / band_power(noise, 2 * f, 4 * f))
            for f in (250.0, 500.0, 1000.0, 2000.0)
        ]
        # Band power over an octave: pink is flat per octave, brown halves (power ~ 1/f^2 over
        # a band twice as wide): the slope per Hz is 3 dB steeper than the slope per band.
        assert np.mean(per_octave) == pytest.approx(slope - 3.0, abs=0.5), (colour, per_octave)


def test_babble_mixes_every_voice_given_at_equal_level_and_repeats_with_its_seed() -> None:
    voices = [talk(3.0 + i, seed=10 + i) for i in range(4)]
    first = babble(voices, 5 * RATE, np.random.default_rng(5))
    again = babble(voices, 5 * RATE, np.random.default_rng(5))
    other = babble(voices, 5 * RATE, np.random.default_rng(6))
    assert np.array_equal(first, again) and not np.array_equal(first, other)
    assert np.mean(first.astype(np.float64) ** 2) == pytest.approx(1.0, rel=1e-4)
    speech = talk(5.0, seed=99)
    mixed = mix_at_snr(speech, first, 0.0, RATE)
    assert snr_db(speech, mixed - speech, RATE) == pytest.approx(0.0, abs=0.2)
    with pytest.raises(PmcError, match="babble needs other conversations"):
        babble([np.zeros(RATE, dtype=np.float32)], RATE, np.random.default_rng(0))


def test_speech_level_needs_speech() -> None:
    assert speech_power(np.zeros(RATE, dtype=np.float32), RATE) is None
    with pytest.raises(PmcError, match="no speech"):
        mix_at_snr(np.zeros(RATE, dtype=np.float32), np.ones(RATE, dtype=np.float32), 10, RATE)


def test_the_telephone_leaves_nothing_above_4_khz_or_below_its_band_but_codec_noise() -> None:
    rng = np.random.default_rng(2)
    wide = np.asarray(0.1 * rng.standard_normal(4 * RATE), dtype=np.float32)
    heard = telephone(wide, RATE, 300.0, 3400.0)
    assert len(heard) == len(wide)
    inside = band_power(heard, 300.0, 3400.0) / 3100.0

    def level_db(low: float, high: float) -> float:
        """Power per Hz in a band, relative to the line's band."""
        return float(10 * np.log10(band_power(heard, low, high) / (high - low) / inside))

    # Below 300 Hz and between 3.6 and 4 kHz, where the band was cut, only the codec's noise:
    # mu-law's 8 bits keep it about 35 dB under the signal, over the whole 4 kHz line.
    floor = max(level_db(20.0, 250.0), level_db(3600.0, 4000.0))
    assert -45 < floor < -30
    # Above the line's 4 kHz only the resampler's leakage, well under that floor.
    assert level_db(4000.0, 4200.0) < floor - 6 and level_db(4200.0, RATE / 2) < floor - 6
    # In the band, what was said comes through, within the codec's noise.
    kept = band_power(heard, 300.0, 3400.0) / band_power(wide, 300.0, 3400.0)
    assert 10 * np.log10(kept) == pytest.approx(0.0, abs=0.5)
    assert LINE_RATE == 8000


def test_echo_arrives_at_the_set_delay_and_level_to_the_sample() -> None:
    echo = Echo(delay_ms=100.0, gain_db=-10.0, rate=RATE)
    played = np.zeros(RATE, dtype=np.float32)
    played[1234] = 0.5
    frame = np.zeros(RATE // 2, dtype=np.float32)
    heard = np.concatenate([echo.add(frame, played, i) for i in range(0, RATE, RATE // 2)])
    (where,) = np.flatnonzero(heard)
    assert where == 1234 + 2400  # 100 ms at 24 kHz
    assert 20 * np.log10(heard[where] / 0.5) == pytest.approx(-10.0, abs=0.1)
    # Nothing comes back from samples not played yet.
    assert not echo.frame(played[:1000], 3000, 480).any()


def test_the_network_delays_without_reordering_loses_at_its_rate_and_repeats_its_seed() -> None:
    frame_ns = 20_000_000
    schedule = deliveries(5000, jitter_ms=30.0, loss=0.02, seed=4, frame_ns=frame_ns)
    assert schedule == deliveries(5000, jitter_ms=30.0, loss=0.02, seed=4, frame_ns=frame_ns)
    assert schedule != deliveries(5000, jitter_ms=30.0, loss=0.02, seed=5, frame_ns=frame_ns)
    # The first frames' fate does not depend on how many frames are asked for.
    assert deliveries(100, jitter_ms=30.0, loss=0.02, seed=4, frame_ns=frame_ns) == schedule[:100]
    arrivals = [d.index * frame_ns + d.delay_ns for d in schedule]
    assert arrivals == sorted(arrivals)
    assert all(d.delay_ns >= 0 for d in schedule)
    assert max(d.delay_ns for d in schedule) <= 60_000_000 + frame_ns  # 2 x jitter, or held
    lost = sum(d.lost for d in schedule) / len(schedule)
    assert lost == pytest.approx(0.02, abs=0.006)
    last = np.full(480, 0.25, dtype=np.float32)
    gone = np.ones(480, dtype=np.float32)
    assert np.array_equal(conceal(gone, last, Concealment.REPEAT), last)
    assert not conceal(gone, last, Concealment.SILENCE).any()
    assert not conceal(gone, None, Concealment.REPEAT).any()  # nothing arrived yet
