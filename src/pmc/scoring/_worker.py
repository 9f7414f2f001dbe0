"""What a scoring worker holds (the recogniser, the embedder) and does with one rollout."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pmc.asr import Transcriber, create_transcriber, faster_whisper
from pmc.points import Point
from pmc.scoring._embed import embedder
from pmc.scoring._memo import RememberingTranscriber
from pmc.scoring._rollout import score_rollout
from pmc.scoring._types import ScoreSettings

WORKER: dict[str, Any] = {}
WORKER_ENV = {"OMP_NUM_THREADS": "1"}
"""Every scoring worker's environment, set before its libraries load: one recogniser thread,
and one OpenMP thread, whatever the machine. Each changes the order of floating-point sums in
Whisper, and so its word times (by hundreds of milliseconds on the tests' tracks), and scores
must not depend on where they were made."""


def init_worker(asr: str, memo: str | None = None) -> None:
    """Load the recogniser and the embedder once per worker process.

    The recogniser hears each distinct clip once (:mod:`pmc.scoring._memo`); ``memo`` is a folder
    where the workers of one pool share what they heard.
    """
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
