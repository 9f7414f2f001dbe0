"""Local scoring workers, kept for the next scoring pass with the same recogniser.

A worker costs about 3 CPU-seconds before its first rollout (a fresh interpreter, Whisper and
the embedder loaded), so a program that scores more than once (a notebook, a script over
several runs, the test suite) keeps its workers, and the words they heard
(:mod:`pmc.scoring._memo`), for as long as it asks for the same recogniser and number of
workers. One pool is kept at a time; the program's exit closes it.
"""

from __future__ import annotations

import atexit
import multiprocessing
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from pmc.scoring._worker import init_worker, worker_env


@dataclass(frozen=True)
class _Kept:
    asr: str
    workers: int
    pool: ProcessPoolExecutor
    memo: tempfile.TemporaryDirectory[str]


_kept: list[_Kept] = []


def scoring_pool(asr: str, workers: int) -> ProcessPoolExecutor:
    """``workers`` processes with ``asr`` loaded: the kept pool if it is that, else a new one.

    Each process is spawned, not forked (a fork of a process whose model libraries run threads
    can deadlock in the child), and all of them start here, inside
    :data:`~pmc.scoring._worker.WORKER_ENV`: a pool otherwise starts a process when a task
    finds none idle, and one started later would not have that environment.
    """
    if _kept and (_kept[0].asr, _kept[0].workers) == (asr, workers):
        return _kept[0].pool
    close_scoring_pool()
    memo = tempfile.TemporaryDirectory(prefix="pmc-words-")
    spawn = multiprocessing.get_context("spawn")
    with worker_env():
        pool = ProcessPoolExecutor(
            workers, mp_context=spawn, initializer=init_worker, initargs=(asr, memo.name)
        )
        for _ in range(workers):  # one submission with none idle starts one process
            pool.submit(_ready)
    _kept.append(_Kept(asr, workers, pool, memo))
    return pool


def close_scoring_pool() -> None:
    """Stop the kept workers (if any) and remove the words they shared."""
    while _kept:
        kept = _kept.pop()
        kept.pool.shutdown(wait=True, cancel_futures=True)
        kept.memo.cleanup()


def _ready() -> None:
    """A task that only makes its process start."""


atexit.register(close_scoring_pool)
