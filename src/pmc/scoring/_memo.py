"""Each distinct clip recognised once: the same samples give the same words.

docs/architecture.md "Metrics". A scoring worker's recogniser is deterministic (greedy decoding
at temperature 0, one thread, the fixed :data:`~pmc.scoring._worker.WORKER_ENV`), so a clip's
words depend on its samples alone, and a run repeats clips often: the person and the shuffled
person replay the same replies, always-speak the same monologue, a voice agent its canned
answer. Words are kept by the digest of the clip's samples, in memory and, for the processes of
one local pool, in a folder they share, so each distinct clip costs one pass of the recogniser.
No score changes: what is kept is exactly what the recogniser returned for those samples.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from pathlib import Path

import numpy as np

from pmc import io
from pmc.asr import TimedWord, Transcriber
from pmc.audio import FloatArray

KEEP = 4096
"""Clips whose words a process keeps in memory (a few hundred bytes each); older ones are read
back from the shared folder, where there is one, or recognised again."""


def clip_digest(spec: str, audio: FloatArray) -> str:
    """The key of a clip's words: the recogniser's setting and the clip's exact samples."""
    samples = np.ascontiguousarray(audio, dtype=np.float32)
    digest = hashlib.blake2b(spec.encode(), digest_size=20)
    digest.update(samples.tobytes())
    return digest.hexdigest()


class RememberingTranscriber(Transcriber):
    """``inner``, asked once per distinct clip (its words then kept by :func:`clip_digest`).

    ``folder``: shared with other processes that run the same recogniser setting in the same
    environment (the workers of one pool), so that a clip one of them heard is not heard again.
    """

    def __init__(self, inner: Transcriber, folder: Path | None = None, keep: int = KEEP) -> None:
        self.spec = inner.spec
        self._inner = inner
        self._folder = folder
        self._keep = keep
        self._memory: OrderedDict[str, list[TimedWord]] = OrderedDict()
        self.recognised = 0
        """Clips the recogniser was asked to hear (the rest were remembered)."""

    def transcribe(self, audio: FloatArray) -> list[TimedWord]:
        """The words of ``audio``, recognised unless these samples were heard before."""
        key = clip_digest(self.spec, audio)
        words = self._recall(key)
        if words is None:
            words = self._inner.transcribe(audio)
            self.recognised += 1
            if self._folder is not None:
                io.write_json(self._folder / f"{key}.json", [_plain(w) for w in words])
        self._memory[key] = words
        self._memory.move_to_end(key)
        while len(self._memory) > self._keep:
            self._memory.popitem(last=False)
        return list(words)

    def text(self, audio: FloatArray) -> str:
        """What was said, without times (the recogniser's own faster pass; not kept)."""
        return self._inner.text(audio)

    def _recall(self, key: str) -> list[TimedWord] | None:
        if key in self._memory:
            return self._memory[key]
        path = None if self._folder is None else self._folder / f"{key}.json"
        if path is None or not path.exists():
            return None
        rows = json.loads(path.read_text(encoding="utf-8"))
        return [TimedWord(str(t), float(s), float(e), float(p)) for t, s, e, p in rows]


def _plain(word: TimedWord) -> list[object]:
    # JSON writes a float as its shortest repr, which reads back as the same float.
    return [word.text, word.start_s, word.end_s, word.probability]
