import io
import tarfile
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from pmc import audio
from pmc.errors import InputError, Problem


def _tone(freq: float, rate: int, seconds: float = 1.0, amp: float = 0.5) -> np.ndarray:
    t = np.arange(round(rate * seconds)) / rate
    return (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def _peak_hz(x: np.ndarray, rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(x * np.hanning(len(x))))
    return float(np.fft.rfftfreq(len(x), 1 / rate)[np.argmax(spectrum)])


@pytest.mark.parametrize("subtype", ["PCM_16", "FLOAT"])
def test_reads_48k_as_24k_mono(tmp_path: Path, subtype: str) -> None:
    path = tmp_path / "a.wav"
    path.write_bytes(audio.wav_bytes(_tone(1000, 48_000), 48_000, subtype))
    ref = audio.probe(path)
    assert (ref.sample_rate, ref.num_frames, ref.subtype) == (48_000, 48_000, subtype)
    x = audio.read(ref)
    assert x.dtype == np.float32
    assert len(x) == 24_000
    assert _peak_hz(x, 24_000) == pytest.approx(1000, abs=2)
    rms = float(np.sqrt(np.mean(x[1000:-1000] ** 2)))
    assert rms == pytest.approx(0.5 / np.sqrt(2), rel=0.01)


def test_resampling_filters_instead_of_dropping_samples(tmp_path: Path) -> None:
    # A 15 kHz tone cannot exist at 24 kHz (Nyquist 12 kHz). Dropping every other sample
    # would fold it to 9 kHz at full strength; a band-limited resampler removes it.
    x = _tone(15_000, 48_000)
    folded = x[::2]
    assert np.sqrt(np.mean(folded**2)) > 0.3
    y = audio.resample(x, 48_000, 24_000)
    assert float(np.sqrt(np.mean(y[1000:-1000] ** 2))) < 0.01


def test_stereo_channel_is_selected(tmp_path: Path) -> None:
    stereo = np.stack([_tone(300, 24_000), _tone(2000, 24_000)], axis=1)
    path = tmp_path / "s.wav"
    path.write_bytes(audio.wav_bytes(stereo, 24_000))
    left, right = (audio.read(audio.probe(path, channel=c)) for c in (0, 1))
    assert _peak_hz(left, 24_000) == pytest.approx(300, abs=2)
    assert _peak_hz(right, 24_000) == pytest.approx(2000, abs=2)
    with pytest.raises(InputError, match="channel 2"):
        audio.probe(path, channel=2)


def test_tar_member_reads_like_the_file(tmp_path: Path) -> None:
    data = audio.wav_bytes(_tone(440, 48_000), 48_000)
    tar_path = tmp_path / "x.tar"
    with tarfile.open(tar_path, "w") as tar:
        for name in ("other.bin", "a.wav"):
            payload = b"z" * 777 if name == "other.bin" else data
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    with tarfile.open(tar_path) as tar:
        member = tar.getmember("a.wav")
    ref = audio.probe(
        tar_path, member="a.wav", member_offset=member.offset_data, member_size=member.size
    )
    direct = tmp_path / "a.wav"
    direct.write_bytes(data)
    np.testing.assert_array_equal(audio.read(ref), audio.read(audio.probe(direct)))
    assert ref.display == f"{tar_path}:a.wav"


def test_probe_names_empty_and_corrupt_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.wav"
    empty.write_bytes(audio.wav_bytes(np.zeros(0, dtype=np.float32), 48_000))
    corrupt = tmp_path / "corrupt.wav"
    corrupt.write_bytes(b"RIFF\x10\x00\x00\x00WAVEjunkjunk")
    with pytest.raises(InputError) as info:
        audio.probe(empty)
    assert info.value.problem is Problem.EMPTY_AUDIO
    assert str(empty) in str(info.value)
    with pytest.raises(InputError) as info:
        audio.probe(corrupt)
    assert info.value.problem is Problem.CORRUPT_AUDIO
    assert str(corrupt) in str(info.value)


def test_wav_bytes_are_deterministic() -> None:
    x = _tone(440, 24_000)
    assert audio.wav_bytes(x, 24_000) == audio.wav_bytes(x.copy(), 24_000)


def _audioop() -> ModuleType:
    """The standard library's G.711 reference (3.12 and older; removed in 3.13)."""
    import sys
    import warnings

    if sys.version_info >= (3, 13):
        return pytest.importorskip("audioop")  # absent on 3.13: only then is this skipped
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import audioop
    return audioop


def test_mulaw_encode_matches_the_reference_on_every_pcm16_value() -> None:
    reference = _audioop()
    pcm = np.arange(-32768, 32768, dtype=np.int16)
    expected = np.frombuffer(reference.lin2ulaw(pcm.astype("<i2").tobytes(), 2), dtype=np.uint8)
    assert np.array_equal(audio.mulaw_encode(pcm), expected)


def test_mulaw_decode_matches_the_reference_on_every_code() -> None:
    reference = _audioop()
    codes = np.arange(256, dtype=np.uint8)
    expected = np.frombuffer(reference.ulaw2lin(codes.tobytes(), 2), dtype="<i2")
    assert np.array_equal(audio.mulaw_decode(codes), expected)


def test_mulaw_known_values_and_round_trip() -> None:
    # G.711: silence is 0xFF (0x7F is "negative zero"); full scale is 0x80 / 0x00; -1 is the
    # smallest negative step (the reference cuts to 14 bits by an arithmetic shift: -1 stays -1).
    pcm = np.array([0, -1, 32767, -32768, 1000, -1000], dtype=np.int16)
    assert audio.mulaw_encode(pcm).tolist() == [0xFF, 0x7E, 0x80, 0x00, 0xCE, 0x4E]
    assert audio.mulaw_decode(np.array([0xFF, 0x7F, 0x80, 0x00], dtype=np.uint8)).tolist() == [
        0,
        0,
        32124,
        -32124,
    ]
    codes = np.arange(256, dtype=np.uint8)
    decoded = audio.mulaw_decode(codes)
    again = audio.mulaw_encode(decoded)
    # Every code round-trips, except the two zeros, which both decode to 0 and encode to 0xFF.
    assert np.array_equal(again[codes != 0x7F], codes[codes != 0x7F])
    # The quantisation error is under half a step: at most 1/32 of the magnitude, plus the bias.
    pcm = np.arange(-32000, 32000, 7, dtype=np.int16)
    error = np.abs(audio.mulaw_decode(audio.mulaw_encode(pcm)).astype(np.int32) - pcm)
    assert np.all(error <= np.abs(pcm.astype(np.int32)) // 32 + 8)
