"""The append-only decision logs: ``WORKDIR/review/<reviewer>.jsonl``, one per reviewer.

A line is written whole and flushed to disk before the app answers, so a killed app loses at
most the decision being made. A line that cannot be read is reported with its file and line
number and skipped; the rest of the log still counts.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pmc import io
from pmc.review._types import Entry, check_reviewer

REVIEW_DIR = "review"
LOG_SUFFIX = ".jsonl"
_APPEND = threading.Lock()


def review_dir(workdir: Path) -> Path:
    """Where reviews live."""
    return workdir / REVIEW_DIR


def log_path(workdir: Path, reviewer: str) -> Path:
    """One reviewer's log."""
    return review_dir(workdir) / f"{check_reviewer(reviewer)}{LOG_SUFFIX}"


def now_utc() -> str:
    """The wall-clock time of a decision, ISO 8601 in UTC to the millisecond."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def append(workdir: Path, entry: Entry) -> None:
    """Add one decision to its reviewer's log, on disk before this returns."""
    path = log_path(workdir, entry.reviewer)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = io.json_line(entry.to_dict())
    with _APPEND, path.open("a", encoding="utf-8") as handle:
        handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())


@dataclass
class LogRead:
    """Every readable entry of the logs, and one message per line that was not."""

    entries: list[Entry] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def reviewers(workdir: Path) -> list[str]:
    """The reviewers with a log, sorted."""
    folder = review_dir(workdir)
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.glob(f"*{LOG_SUFFIX}") if not p.name.startswith("."))


def read_log(workdir: Path, reviewer: str | None = None) -> LogRead:
    """The entries of one reviewer's log, or of every log, each in the order written."""
    read = LogRead()
    for name in [reviewer] if reviewer is not None else reviewers(workdir):
        path = log_path(workdir, name)
        if not path.exists():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                entry = Entry.from_dict(json.loads(line))
            except (ValueError, KeyError, TypeError) as exc:
                read.skipped.append(f"{path}: line {number}: not a review decision ({exc})")
                continue
            if entry.reviewer != name:
                read.skipped.append(
                    f"{path}: line {number}: a decision of {entry.reviewer!r} in {name!r}'s log"
                )
                continue
            read.entries.append(entry)
    return read
