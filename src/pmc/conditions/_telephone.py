"""A phone line: its band, and the G.711 mu-law round trip at 8 kHz.

docs/conditions.md "Telephone". Narrowband telephony passes 300 to 3400 Hz (ITU-T G.712's
channel), and carries 8 kHz samples coded as 8-bit mu-law (G.711, as Twilio Media Streams and
most North American lines do). The band is cut in the frequency domain over the whole track
(zero phase: no sample moves), then the track goes down to 8 kHz, through the codec and back up
to its own rate.
"""

from __future__ import annotations

import numpy as np

from pmc.audio import FloatArray, mulaw_decode, mulaw_encode, resample, to_pcm16

LINE_RATE = 8_000
"""G.711's sample rate."""


def band_limit(audio: FloatArray, rate: int, low_hz: float, high_hz: float) -> FloatArray:
    """``audio`` with everything outside ``low_hz``..``high_hz`` removed (a brick wall)."""
    spectrum = np.fft.rfft(audio.astype(np.float64))
    freqs = np.fft.rfftfreq(len(audio), 1.0 / rate)
    spectrum[(freqs < low_hz) | (freqs > high_hz)] = 0.0
    return np.asarray(np.fft.irfft(spectrum, n=len(audio)), dtype=np.float32)


def telephone(audio: FloatArray, rate: int, low_hz: float, high_hz: float) -> FloatArray:
    """``audio`` as heard through a phone line, at its own rate and length."""
    line = resample(band_limit(audio, rate, low_hz, high_hz), rate, LINE_RATE)
    coded = mulaw_decode(mulaw_encode(to_pcm16(line))).astype(np.float32) / 32767.0
    back = resample(coded, LINE_RATE, rate)
    out = np.zeros(len(audio), dtype=np.float32)
    out[: min(len(back), len(audio))] = back[: len(audio)]
    return out
