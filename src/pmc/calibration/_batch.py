"""A run's tracks labelled: cached decodes reused, the rest decoded here or in worker processes."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from pmc import io
from pmc.calibration._cache import Decoded, read_cached, store
from pmc.calibration._decode import DecoderLoader, WindowDecoder, decode_track, load_decoder
from pmc.calibration._label import TrackLabels, label_windows
from pmc.calibration._settings import LabelSettings
from pmc.calibration._tracks import TrackKey, read_track
from pmc.cpu import long_slices
from pmc.errors import InputError, PmcError, Problem
from pmc.harness import PLAYED_FILE
from pmc.progress import Start


@dataclass(frozen=True)
class LabelledRun:
    """The labels of a run's tracks, and how many were decoded now or taken from the cache.

    Attributes:
        tracks: Every track with its labels, in the order given.
        decoded: Tracks transcribed by this invocation.
        reused: Tracks whose cached decodes were still valid.
    """

    tracks: tuple[tuple[TrackKey, TrackLabels], ...]
    decoded: int
    reused: int


def label_tracks(
    run_dir: Path,
    keys: Sequence[TrackKey],
    settings: LabelSettings | None = None,
    workers: int = 1,
    start: Start | None = None,
    load: DecoderLoader = load_decoder,
) -> LabelledRun:
    """Label every track, decoding only those without valid cached decodes.

    Args:
        run_dir: The run's folder.
        keys: The tracks.
        settings: How to label (:class:`LabelSettings`' defaults when None).
        workers: Transcribing processes, each loading the decoder once; 1 decodes in this
            process.
        start: Progress hook, called with the number of tracks.
        load: Builds the decoder from ``settings.asr`` and a thread count; called only when
            some track needs decoding.
    """
    if workers < 1:
        raise PmcError(f"workers must be at least 1, got {workers}")
    settings = settings or LabelSettings()
    advance = start(len(keys)) if start else (lambda: None)
    found: dict[TrackKey, Decoded] = {}
    todo: list[tuple[TrackKey, str]] = []
    for key in keys:
        played = key.folder(run_dir) / PLAYED_FILE
        if not played.exists():
            raise InputError(
                played, "missing, though the rollout has a trace", problem=Problem.MISSING_FILE
            )
        sha = io.sha256_file(played)
        cached = read_cached(key.labels_path(run_dir), sha, settings)
        if cached is None:
            todo.append((key, sha))
        else:
            found[key] = cached
            advance()

    def keep(key: TrackKey, sha: str, decoded: Decoded) -> None:
        store(key.labels_path(run_dir), key, sha, settings, decoded)
        found[key] = decoded
        advance()

    cores = os.cpu_count() or 1
    if todo and workers == 1:
        decoder = load(settings.asr, cores)
        for key, sha in todo:
            track = read_track(key.folder(run_dir))
            keep(key, sha, (len(track), decode_track(decoder, track, settings)))
    elif todo:
        threads = max(1, cores // workers)
        with _pool(min(workers, len(todo)), load, settings.asr, threads) as pool:
            futures = {
                pool.submit(_decode_job, key.folder(run_dir), settings): (key, sha)
                for key, sha in todo
            }
            for future in as_completed(futures):
                keep(*futures[future], future.result())
    tracks = tuple((key, label_windows(found[key][1], found[key][0], settings)) for key in keys)
    return LabelledRun(tracks, decoded=len(todo), reused=len(keys) - len(todo))


_worker_decoder: WindowDecoder | None = None


def _init_worker(load: DecoderLoader, asr: str, threads: int) -> None:
    """Load the decoder once per worker process, which only computes (long slices: pmc.cpu)."""
    global _worker_decoder
    long_slices()
    _worker_decoder = load(asr, threads)


def _decode_job(folder: Path, settings: LabelSettings) -> Decoded:
    assert _worker_decoder is not None, "the pool's initializer loads the decoder"
    try:
        track = read_track(folder)
    except InputError as exc:  # its constructor's arguments do not survive pickling
        raise PmcError(str(exc)) from None
    return len(track), decode_track(_worker_decoder, track, settings)


def _pool(workers: int, load: DecoderLoader, asr: str, threads: int) -> Executor:
    # Spawned, not forked: the parent may hold threads (progress bar, CTranslate2) that a
    # fork would copy mid-operation.
    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_init_worker,
        initargs=(load, asr, threads),
    )
