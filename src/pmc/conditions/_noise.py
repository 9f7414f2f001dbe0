"""Noise at a set SNR on the speech: stationary (room, car) and babble.

docs/conditions.md "Noise". The SNR is measured on the speech, not on the whole track: a live
stream is half silence, and noise set against its average power would sit 3 dB or more below
the SNR a listener hears while someone talks. The speech's level is the mean power of the 20 ms
windows the scorer's gate counts as speech (RMS at or above its 0.01 threshold, docs/architecture.md
"Metrics"), in the spirit of ITU-T P.56's active speech level.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pmc.audio import SAMPLE_RATE, FloatArray
from pmc.conditions._spec import NoiseColour
from pmc.errors import PmcError

SPEECH_RMS = 0.01
"""A 20 ms window at or above this RMS is speech (the scorer's gate threshold)."""
WINDOW_S = 0.02
"""The gate's window."""
LOWEST_HZ = 50.0
"""Stationary noise starts here: a room's hum and a car's engine sit above it, and below it a
microphone and a phone line pass little."""


def speech_power(audio: FloatArray, rate: int) -> float | None:
    """Mean power of the windows of ``audio`` that hold speech; None where none does."""
    width = max(1, round(WINDOW_S * rate))
    whole = len(audio) // width * width
    if whole == 0:
        return None
    power = np.mean(np.square(audio[:whole].astype(np.float64)).reshape(-1, width), axis=1)
    speech = power[power >= SPEECH_RMS**2]
    return float(np.mean(speech)) if speech.size else None


def snr_db(speech: FloatArray, noise: FloatArray, rate: int) -> float:
    """The SNR of ``noise`` against ``speech``: speech power over the noise's mean power, dB."""
    level = speech_power(speech, rate)
    if level is None:
        raise PmcError("the track holds no speech to measure an SNR against")
    return 10.0 * float(np.log10(level / float(np.mean(np.square(noise.astype(np.float64))))))


def coloured_noise(
    colour: NoiseColour, samples: int, rng: np.random.Generator, rate: int = SAMPLE_RATE
) -> FloatArray:
    """Unit-power noise of ``colour``: white noise shaped in the frequency domain.

    Nothing below :data:`LOWEST_HZ`: there the 1/f slopes would put most of the power in slow
    swells no microphone passes, and a stretch of a few seconds would be louder or quieter
    than the next.
    """
    white = rng.standard_normal(samples)
    spectrum = np.fft.rfft(white)
    freqs = np.fft.rfftfreq(samples, 1.0 / rate)
    slope = 0.5 if colour is NoiseColour.ROOM else 1.0  # power ~ 1/f (pink) or 1/f^2 (brown)
    gain = np.zeros_like(freqs)
    audible = freqs >= LOWEST_HZ
    gain[audible] = freqs[audible] ** -slope
    return _unit(np.fft.irfft(spectrum * gain, n=samples))


def babble(others: Sequence[FloatArray], samples: int, rng: np.random.Generator) -> FloatArray:
    """Several voices at once: each of ``others`` from a seeded offset, at equal level, summed.

    Each track repeats where it is shorter than ``samples``. Raises :class:`PmcError` when no
    track holds speech.
    """
    mixed = np.zeros(samples, dtype=np.float64)
    voices = 0
    for track in others:
        power = float(np.mean(np.square(track.astype(np.float64)))) if len(track) else 0.0
        if power == 0.0:
            continue
        start = int(rng.integers(len(track)))
        looped = np.resize(np.roll(track.astype(np.float64), -start), samples)
        mixed += looped / np.sqrt(power)
        voices += 1
    if voices == 0:
        raise PmcError("babble needs other conversations with speech; none was given")
    return _unit(mixed)


def mix_at_snr(speech: FloatArray, noise: FloatArray, snr: float, rate: int) -> FloatArray:
    """``speech`` with ``noise`` (as long) added so that their SNR on the speech is ``snr`` dB."""
    if len(noise) != len(speech):
        raise ValueError("speech and noise must have the same length")
    level = speech_power(speech, rate)
    if level is None:
        raise PmcError("the track holds no speech to set an SNR against")
    noise64 = noise.astype(np.float64)
    gain = np.sqrt(level / 10.0 ** (snr / 10.0) / float(np.mean(np.square(noise64))))
    return np.asarray(speech.astype(np.float64) + gain * noise64, dtype=np.float32)


def _unit(noise: np.ndarray) -> FloatArray:
    power = float(np.mean(np.square(noise)))
    return np.asarray(noise / np.sqrt(power) if power > 0 else noise, dtype=np.float32)
