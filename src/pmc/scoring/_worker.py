"""What a scoring worker holds (the recogniser, the embedder) and does with one rollout."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pmc.asr import Transcriber, create_transcriber, faster_whisper
from pmc.cpu import long_slices
from pmc.points import Point
from pmc.scoring._embed import embedder
from pmc.scoring._memo import RememberingTranscriber
from pmc.scoring._rollout import score_rollout
from pmc.scoring._types import ScoreSettings

WORKER: dict[str, Any] = {}
ALLOCATOR_ENV = {
    "MALLOC_MMAP_THRESHOLD_": str(64 * 2**20),
    "MALLOC_TRIM_THRESHOLD_": str(256 * 2**20),
}
"""glibc's allocator in a scoring worker: blocks up to 64 MB from its heap, and up to 256 MB of
freed heap kept. The recogniser takes and frees blocks of tens of megabytes for every clip
(Whisper's features, CTranslate2's buffers); with glibc's defaults each is mapped, faulted in
page by page and handed back to the kernel, clip after clip, and a fifth of a worker's CPU time
was the kernel's: 6.4 of 33 CPU-seconds scoring the shuffled person of the demo's reference run,
0.2 with these (32 MB and glibc's own trim threshold: no change). No result changes: only where
the memory comes from."""
WORKER_ENV = {"OMP_NUM_THREADS": "1", **ALLOCATOR_ENV}
"""Every scoring worker's environment, set before its libraries load: one recogniser thread,
and one OpenMP thread, whatever the machine (each changes the order of floating-point sums in
Whisper, and so its word times, by hundreds of milliseconds on the tests' tracks, and scores
must not depend on where they were made), and :data:`ALLOCATOR_ENV`."""


def init_worker(asr: str, memo: str | None = None) -> None:
    """Load the recogniser and the embedder once per worker process.

    The recogniser hears each distinct clip once (:mod:`pmc.scoring._memo`); ``memo`` is a folder
    where the workers of one pool share what they heard. A worker only computes, so it asks
    for long scheduler slices (:func:`pmc.cpu.long_slices`).
    """
    long_slices()
    WORKER["asr"] = RememberingTranscriber(_transcriber(asr, 1), Path(memo) if memo else None)
    WORKER["embed"] = embedder()


@contextmanager
def worker_env() -> Iterator[None]:
    """:data:`WORKER_ENV` in this process's environment, for the workers it starts meanwhile."""
    saved = {key: os.environ.get(key) for key in WORKER_ENV}
    os.environ.update(WORKER_ENV)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _transcriber(spec: str, threads: int) -> Transcriber:
    name, _, model = spec.partition(":")
    if name == "faster-whisper":
        return faster_whisper(model, "base", threads)
    return create_transcriber(spec)


def score_in_worker(
    folder: Path, point: Point, system: str, rollout: int, settings: dict[str, Any]
) -> dict[str, Any]:
    """Score the rollout in ``folder`` with this worker's models; the score as a dict."""
    s = ScoreSettings.from_dict(settings)
    score = score_rollout(
        folder,
        point,
        system,
        rollout,
        s,
        WORKER["asr"],
        WORKER["embed"].cosine,
    )
    return score.to_dict()
