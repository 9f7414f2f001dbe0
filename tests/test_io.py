"""Atomic writing: a write that fails or is killed leaves the old file whole.

A failure inside the process removes its temporary file at once; a killed process cannot, and
leaves it for :func:`pmc.io.remove_temporaries`, which the stages call when they start.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pmc import io

OLD = '{"version": "old"}\n'
NEW = '{"version": "new", "padding": "' + "x" * 100_000 + '"}\n'
"""Longer than a write buffer, so a write cut short would leave part of it."""

KILLED_BEFORE_RENAME = """
import os, signal, sys
from pathlib import Path
from pmc import io

def die(src, dst):
    os.kill(os.getpid(), signal.SIGKILL)

os.replace = die  # the process dies between writing the temporary file and renaming it
io.write_text(Path(sys.argv[1]), sys.argv[2])
"""
KILLED_MID_WRITE = """
import os, signal, sys
from pathlib import Path
from pmc import io

with io.atomic_open(Path(sys.argv[1])) as handle:
    handle.write(sys.argv[2][:1000])
    handle.flush()
    os.kill(os.getpid(), signal.SIGKILL)  # the process dies halfway through the new content
"""


class Failure(Exception):
    """A writer's own failure."""


def temporaries(folder: Path) -> list[Path]:
    return sorted(folder.glob(".*.tmp"))


@pytest.mark.parametrize("error", [Failure, KeyboardInterrupt])
def test_a_write_that_fails_midway_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, error: type[BaseException]
) -> None:
    path = tmp_path / "record.json"
    io.write_text(path, OLD)
    with pytest.raises(error), io.atomic_open(path) as handle:
        handle.write(NEW[:1000])
        handle.flush()
        raise error("the writer failed")
    assert path.read_text(encoding="utf-8") == OLD
    assert temporaries(tmp_path) == []


@pytest.mark.parametrize(
    "script", [KILLED_BEFORE_RENAME, KILLED_MID_WRITE], ids=["before-rename", "mid-write"]
)
def test_a_killed_write_leaves_the_old_file_and_a_temporary_the_next_run_removes(
    tmp_path: Path, script: str
) -> None:
    path = tmp_path / "record.json"
    io.write_text(path, OLD)
    killed = subprocess.run([sys.executable, "-c", script, str(path), NEW], check=False)
    assert killed.returncode == -signal.SIGKILL
    assert path.read_text(encoding="utf-8") == OLD
    (left,) = temporaries(tmp_path)
    assert left.name.startswith(f".{path.name}.")
    if script is KILLED_BEFORE_RENAME:
        assert left.read_text(encoding="utf-8") == NEW  # written in full, only not renamed
    assert io.remove_temporaries(tmp_path) == 1
    assert [p.name for p in tmp_path.iterdir()] == [path.name]
    io.write_text(path, NEW)
    assert path.read_text(encoding="utf-8") == NEW


def test_remove_temporaries_removes_only_what_atomic_open_leaves(tmp_path: Path) -> None:
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    left = [tmp_path / ".run.json.k1ll3d.tmp", nested / ".0.json.k1ll3d.tmp"]
    kept = [tmp_path / "notes.tmp", tmp_path / ".hidden", nested / "0.json"]
    for path in left + kept:
        path.write_text("x", encoding="utf-8")
    assert io.remove_temporaries(tmp_path, recursive=False) == 1
    assert nested.joinpath(".0.json.k1ll3d.tmp").exists()
    assert io.remove_temporaries(tmp_path) == 1
    remaining = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    assert remaining == sorted(kept)
