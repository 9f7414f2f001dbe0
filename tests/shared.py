"""Folders that the whole test run builds once, however many pytest-xdist workers ask for them.

Each worker is a process of its own, so a session fixture alone would build its folder once per
worker. :func:`built_once` builds it in the run's common temporary folder (the parent of every
worker's own), under a file lock, and marks it done only when the build returned: the other
workers wait on the lock and then read the same folder. A build that failed leaves no mark, so
the next worker to ask builds it again (and fails the same way, saying why).

Folders built here are shared, so tests read them and write only to folders of their own.
``PMC_TEST_SHARED`` names a folder that holds them instead, so that two pytest runs share
them too: ``make test`` runs its parallel part and then its ``alone`` tests that way.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from filelock import FileLock

DONE = ".built"
"""The mark of a finished build, inside its folder."""


SHARED_ENV = "PMC_TEST_SHARED"


def run_root(factory: pytest.TempPathFactory) -> Path:
    """The temporary folder common to every worker of this test run (or ``PMC_TEST_SHARED``)."""
    if shared := os.environ.get(SHARED_ENV):
        return Path(shared)
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], object]) -> Path:
    """``run_root/name``, made by ``build(folder)`` exactly once per test run."""
    root = run_root(factory)
    folder = root / name
    with FileLock(str(root / f"{name}.lock")):
        if not (folder / DONE).exists():
            shutil.rmtree(folder, ignore_errors=True)  # a build that failed half-way
            folder.mkdir(parents=True)
            build(folder)
            (folder / DONE).touch()
    return folder
