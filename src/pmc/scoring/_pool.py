"""Local scoring workers, kept for the next scoring pass with the same recogniser.

A worker costs about 3 CPU-seconds before its first rollout (a fresh interpreter, Whisper and
the embedder loaded), so a program that scores more than once (a notebook, a script over
several runs, the test suite) keeps its workers, and the words they heard
(:mod:`pmc.scoring._memo`), for as long as it asks for the same recogniser and number of
workers. Up to :data:`KEEP_POOLS` pools are kept, the one used longest ago closed first; the
program's exit closes them. Where :data:`WORDS_ENV` names a folder, every pool's workers keep
the words there instead, for every process that names the same folder, and leave them.
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from pmc.scoring._worker import init_worker, worker_env


@dataclass(frozen=True)
class _Kept:
    asr: str
    workers: int
    pool: ProcessPoolExecutor
    memo: tempfile.TemporaryDirectory[str] | None
    """The pool's own folder of words, removed with it (None: :data:`WORDS_ENV`'s, kept)."""


KEEP_POOLS = 2
"""Pools kept at once: a program that alternates two settings (a notebook comparing two
recognisers, the test suite's one and two workers) keeps both, for the idle workers' memory
(each holds its models, a few hundred MB); a third setting closes the one used longest ago."""

WORDS_ENV = "PMC_WORDS_DIR"
"""A folder where local scoring workers keep the words of every clip they recognised, shared by
every process that names it and left there (docs/architecture.md "Metrics"): for several programs
that score the same clips in one environment, as the test suite's processes do. Unset: each
pool has a temporary folder of its own."""

_kept: list[_Kept] = []
"""The kept pools, the most recently used first."""


def scoring_pool(asr: str, workers: int) -> ProcessPoolExecutor:
    """``workers`` processes with ``asr`` loaded: the kept pool if it is that, else a new one.

    Each process is spawned, not forked (a fork of a process whose model libraries run threads
    can deadlock in the child), and all of them start here, inside
    :data:`~pmc.scoring._worker.WORKER_ENV`: a pool otherwise starts a process when a task
    finds none idle, and one started later would not have that environment.
    """
    for i, kept in enumerate(_kept):
        if (kept.asr, kept.workers) == (asr, workers):
            _kept.insert(0, _kept.pop(i))
            return kept.pool
    while len(_kept) >= KEEP_POOLS:
        _close(_kept.pop())
    memo, folder = None, os.environ.get(WORDS_ENV, "")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
    else:
        memo = tempfile.TemporaryDirectory(prefix="pmc-words-")
        folder = memo.name
    spawn = multiprocessing.get_context("spawn")
    with worker_env():
        pool = ProcessPoolExecutor(
            workers, mp_context=spawn, initializer=init_worker, initargs=(asr, folder)
        )
        for _ in range(workers):  # one submission with none idle starts one process
            pool.submit(_ready)
    _kept.insert(0, _Kept(asr, workers, pool, memo))
    return pool


def close_scoring_pool() -> None:
    """Stop every kept worker and remove the words they shared."""
    while _kept:
        _close(_kept.pop())


def _close(kept: _Kept) -> None:
    kept.pool.shutdown(wait=True, cancel_futures=True)
    if kept.memo is not None:
        kept.memo.cleanup()


def _ready() -> None:
    """A task that only makes its process start."""


atexit.register(close_scoring_pool)
