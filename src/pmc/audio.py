"""Audio helpers below every stage: where audio lives, reading it, resampling with soxr, writing.

Inside the benchmark audio is mono float32 at 24 kHz (docs/architecture.md "Clocks"); a source's own
rate is converted once, on read, with soxr's band-limited resampler (never by dropping samples).
"""

from __future__ import annotations

import io
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt
import soundfile as sf
import soxr

from pmc.errors import InputError, Problem

SAMPLE_RATE = 24_000
"""The harness's one sample rate, in Hz (paper appendix C: 24 kHz PCM16 to every system)."""

FloatArray = npt.NDArray[np.float32]


@dataclass(frozen=True)
class AudioRef:
    """Where one speaker's audio lives, and what its header says.

    The audio stays where the source keeps it (docs/architecture.md "On disk"); a tar member is
    addressed by the byte range of its data inside the archive, so it is read without unpacking.

    Attributes:
        path: The WAV file, or the tar archive that holds it.
        sample_rate: The file's own rate in Hz.
        num_frames: Samples per channel.
        channels: Channels in the file.
        channel: The channel that belongs to this speaker.
        subtype: The sample format as soundfile names it (``PCM_16``, ``FLOAT``...).
        member: The member's name inside a tar archive, if any.
        member_offset: Byte offset of the member's data inside the archive.
        member_size: Byte length of the member's data.
    """

    path: str
    sample_rate: int
    num_frames: int
    channels: int = 1
    channel: int = 0
    subtype: str = "PCM_16"
    member: str | None = None
    member_offset: int | None = None
    member_size: int | None = None

    @property
    def duration_s(self) -> float:
        """Length of the audio in seconds."""
        return self.num_frames / self.sample_rate if self.sample_rate else 0.0

    @property
    def display(self) -> str:
        """A name for messages: the file, or ``archive.tar:member``."""
        return f"{self.path}:{self.member}" if self.member else self.path

    def with_path(self, path: str) -> AudioRef:
        """A copy pointing at ``path``."""
        return replace(self, path=path)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "path": self.path,
            "sample_rate": self.sample_rate,
            "num_frames": self.num_frames,
            "channels": self.channels,
            "channel": self.channel,
            "subtype": self.subtype,
            "member": self.member,
            "member_offset": self.member_offset,
            "member_size": self.member_size,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AudioRef:
        """Inverse of :meth:`to_dict`."""
        return cls(
            path=str(data["path"]),
            sample_rate=int(data["sample_rate"]),
            num_frames=int(data["num_frames"]),
            channels=int(data["channels"]),
            channel=int(data["channel"]),
            subtype=str(data["subtype"]),
            member=data.get("member"),
            member_offset=data.get("member_offset"),
            member_size=data.get("member_size"),
        )


class _Slice(io.RawIOBase):
    """A read-only, seekable window onto a byte range of a file (a tar member's data)."""

    def __init__(self, handle: IO[bytes], offset: int, size: int) -> None:
        self._handle = handle
        self._offset = offset
        self._size = size
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, pos: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = min(max(base + pos, 0), self._size)
        return self._pos

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        want = min(len(view), self._size - self._pos)
        if want <= 0:
            return 0
        self._handle.seek(self._offset + self._pos)
        data = self._handle.read(want)
        view[: len(data)] = data
        self._pos += len(data)
        return len(data)


def _open(ref_path: str, member_offset: int | None, member_size: int | None) -> IO[bytes]:
    handle = open(ref_path, "rb")  # noqa: SIM115 - closed by the caller's context
    if member_offset is None or member_size is None:
        return handle
    return io.BufferedReader(_Slice(handle, member_offset, member_size))


def probe(
    path: str | Path,
    *,
    member: str | None = None,
    member_offset: int | None = None,
    member_size: int | None = None,
    channel: int = 0,
) -> AudioRef:
    """Read a WAV's header into an :class:`AudioRef`; raise :class:`InputError` if it is unusable.

    Catches what the import must skip: a file soundfile cannot parse (corrupt, truncated header)
    and an empty file (no samples).
    """
    name = f"{path}:{member}" if member else str(path)
    try:
        with _open(str(path), member_offset, member_size) as handle:
            info = sf.info(handle)
    except (sf.LibsndfileError, RuntimeError, ValueError) as exc:
        raise InputError(name, f"corrupt WAV ({exc})", problem=Problem.CORRUPT_AUDIO) from None
    except OSError as exc:
        raise InputError(
            name, f"cannot read WAV ({exc.strerror or exc})", problem=Problem.MISSING_FILE
        ) from None
    if info.frames <= 0:
        raise InputError(name, "empty WAV (no samples)", problem=Problem.EMPTY_AUDIO)
    if channel >= info.channels:
        raise InputError(name, f"has {info.channels} channel(s), channel {channel} requested")
    return AudioRef(
        path=str(path),
        sample_rate=int(info.samplerate),
        num_frames=int(info.frames),
        channels=int(info.channels),
        channel=channel,
        subtype=str(info.subtype),
        member=member,
        member_offset=member_offset,
        member_size=member_size,
    )


def read(ref: AudioRef, base_dir: Path | None = None) -> FloatArray:
    """Read one speaker's audio as mono float32 at :data:`SAMPLE_RATE`.

    Args:
        ref: Where the audio is.
        base_dir: Directory that a relative ``ref.path`` is relative to.
    """
    path = Path(ref.path)
    if base_dir is not None and not path.is_absolute():
        path = base_dir / path
    try:
        with _open(str(path), ref.member_offset, ref.member_size) as handle:
            data, rate = sf.read(handle, dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, ValueError, OSError) as exc:
        raise InputError(
            ref.display, f"cannot read audio ({exc})", problem=Problem.CORRUPT_AUDIO
        ) from None
    mono = np.ascontiguousarray(data[:, ref.channel])
    return resample(mono, int(rate), SAMPLE_RATE)


def resample(audio: FloatArray, rate_in: float, rate_out: int = SAMPLE_RATE) -> FloatArray:
    """Band-limited resampling with soxr (high quality); a no-op when the rates match."""
    if rate_in == rate_out:
        return audio.astype(np.float32, copy=False)
    out = soxr.resample(audio, rate_in, rate_out, quality="HQ")
    return np.asarray(out, dtype=np.float32)


def to_pcm16(audio: FloatArray) -> npt.NDArray[np.int16]:
    """Float in [-1, 1] to PCM16, clipping and rounding to nearest."""
    return np.asarray(np.rint(np.clip(audio, -1.0, 1.0) * 32767.0), dtype=np.int16)


def wav_bytes(audio: npt.NDArray[Any], sample_rate: int, subtype: str = "PCM_16") -> bytes:
    """Encode mono or (frames, channels) audio as WAV bytes; the same input gives the same bytes."""
    buffer = io.BytesIO()
    sf.write(buffer, audio, sample_rate, subtype=subtype, format="WAV")
    return buffer.getvalue()


MULAW_SEGMENT_ENDS = np.array(
    [0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF, 0x1FFF], dtype=np.int32
)
"""Where each of G.711 mu-law's eight segments ends, on the 14-bit biased magnitude."""


def mulaw_encode(pcm: npt.NDArray[np.int16]) -> npt.NDArray[np.uint8]:
    """PCM16 as G.711 mu-law bytes (telephony's 8 kHz codec, e.g. Twilio Media Streams).

    The reference algorithm (Sun's g711.c, as the standard library's ``audioop.lin2ulaw``):
    the sample is cut to 14 bits, its magnitude clipped and biased, then coded as a segment and
    four mantissa bits, all bits inverted.
    """
    value = np.asarray(pcm, dtype=np.int32) >> 2
    negative = value < 0
    mask = np.where(negative, 0x7F, 0xFF)
    magnitude = np.minimum(np.where(negative, -value, value), 8159) + 33
    segment = np.searchsorted(MULAW_SEGMENT_ENDS, magnitude, side="left")
    shift = np.minimum(segment, 7) + 1
    code = np.where(segment >= 8, 0x7F, (segment << 4) | ((magnitude >> shift) & 0x0F))
    return np.asarray(code ^ mask, dtype=np.uint8)


def mulaw_decode(codes: npt.NDArray[np.uint8]) -> npt.NDArray[np.int16]:
    """G.711 mu-law bytes as PCM16 (exact: every code has one linear value)."""
    code = ~np.asarray(codes, dtype=np.int32) & 0xFF
    magnitude = (((code & 0x0F) << 3) + 0x84) << ((code & 0x70) >> 4)
    return np.asarray(np.where(code & 0x80, 0x84 - magnitude, magnitude - 0x84), dtype=np.int16)


__all__ = [
    "MULAW_SEGMENT_ENDS",
    "SAMPLE_RATE",
    "AudioRef",
    "FloatArray",
    "mulaw_decode",
    "mulaw_encode",
    "probe",
    "read",
    "resample",
    "to_pcm16",
    "wav_bytes",
]
