"""Builders of small Seamless Interaction corpora in its real layouts, for tests.

The records follow the real format (docs/wire-formats.md section 1): transcript lines
``{"start", "end", "transcript", "words": [{"word", "start", "end", "score"}]}`` and voice-activity
lines ``{"start", "end"}``; not the mock schema of Meta's own test suite.
"""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pmc.audio import FloatArray, wav_bytes


@dataclass(frozen=True)
class FakeParticipant:
    """One participant's audio and records, ready to be written in any layout."""

    file_id: str
    audio: FloatArray
    sample_rate: int = 48_000
    subtype: str = "PCM_16"
    transcript: list[dict[str, Any]] = field(default_factory=list)
    vad: list[dict[str, Any]] | None = field(default_factory=list)
    """None leaves the voice activity out entirely (a missing VAD file or key)."""

    def wav(self) -> bytes:
        """The participant's WAV file."""
        return wav_bytes(self.audio, self.sample_rate, self.subtype)

    def json_bytes(self) -> bytes:
        """The consolidated per-participant JSON of the extracted and tar layouts."""
        data: dict[str, Any] = {"id": self.file_id, "metadata:transcript": self.transcript}
        if self.vad is not None:
            data["metadata:vad"] = self.vad
        return json.dumps(data).encode()


def participant(
    file_id: str,
    words: Sequence[tuple[str, float, float]] = (("hello", 0.5, 0.9), ("there", 1.0, 1.4)),
    *,
    duration_s: float = 3.0,
    sample_rate: int = 48_000,
    subtype: str = "PCM_16",
    frequency_hz: float = 220.0,
) -> FakeParticipant:
    """A participant who says ``words`` (as a tone while each word lasts, silence elsewhere).

    The transcript is one record holding every word; voice activity is one stretch per word.
    """
    t = np.arange(round(duration_s * sample_rate)) / sample_rate
    signal = np.zeros_like(t)
    for _, start, end in words:
        inside = (t >= start) & (t < end)
        signal[inside] = 0.3 * np.sin(2 * np.pi * frequency_hz * t[inside])
    transcript = []
    if words:
        transcript.append(
            {
                "start": words[0][1],
                "end": words[-1][2],
                "transcript": " ".join(w for w, _, _ in words),
                "words": [{"word": w, "start": s, "end": e, "score": 0.9} for w, s, e in words],
            }
        )
    vad = [{"start": s, "end": e} for _, s, e in words]
    return FakeParticipant(
        file_id, signal.astype(np.float32), sample_rate, subtype, transcript, vad
    )


def write_extracted(
    root: Path,
    participants: Sequence[FakeParticipant],
    *,
    label: str = "naturalistic",
    split: str = "dev",
    batch: int = 0,
    archive: int = 0,
) -> Path:
    """Write ``{label}/{split}/{batch:04d}/{archive:04d}/{file_id}.{wav,json}``.

    Returns:
        The archive folder.
    """
    folder = root / label / split / f"{batch:04d}" / f"{archive:04d}"
    folder.mkdir(parents=True, exist_ok=True)
    for p in participants:
        (folder / f"{p.file_id}.wav").write_bytes(p.wav())
        (folder / f"{p.file_id}.json").write_bytes(p.json_bytes())
    return folder


def write_tar(
    root: Path,
    participants: Sequence[FakeParticipant],
    *,
    label: str = "naturalistic",
    split: str = "dev",
    batch: int = 0,
    archive: int = 0,
) -> Path:
    """Write a WebDataset shard ``{label}/{split}/{batch:04d}/{archive:04d}.tar``.

    Members are ``{file_id}.{json,mp4,npz,wav}`` in WebDataset's order (sorted by extension within
    a key); the video and feature members are small stand-ins, since the reader never opens them.
    """
    path = root / label / split / f"{batch:04d}" / f"{archive:04d}.tar"
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
        for p in participants:
            members = {
                "json": p.json_bytes(),
                "mp4": b"\x00\x00\x00\x18ftypmp42",
                "npz": b"PK\x05\x06" + b"\x00" * 18,
                "wav": p.wav(),
            }
            for ext, data in members.items():
                info = tarfile.TarInfo(f"{p.file_id}.{ext}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return path


def write_raw(
    root: Path,
    participants: Sequence[FakeParticipant],
    *,
    label: str = "naturalistic",
    split: str = "dev",
) -> Path:
    """Write the raw download layout ``{label}/{split}/audio|metadata/...``; returns its folder."""
    base = root / label / split
    for sub in ("audio", "metadata/transcript", "metadata/vad"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    for p in participants:
        (base / "audio" / f"{p.file_id}.wav").write_bytes(p.wav())
        lines = "".join(json.dumps(r) + "\n" for r in p.transcript)
        (base / "metadata" / "transcript" / f"{p.file_id}.jsonl").write_text(lines)
        if p.vad is not None:
            vad = "".join(json.dumps(r) + "\n" for r in p.vad)
            (base / "metadata" / "vad" / f"{p.file_id}.jsonl").write_text(vad)
    return base
