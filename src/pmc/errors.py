"""Errors meant for the user: printed as one line, without a traceback."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path


class PmcError(Exception):
    """A problem the user can fix (bad arguments, missing files); the CLI prints it plainly."""


class Problem(StrEnum):
    """Why an input item was unusable; import summaries count items by these."""

    CORRUPT_AUDIO = "corrupt audio"
    EMPTY_AUDIO = "empty audio"
    AUDIO_SHORTER_THAN_TRANSCRIPT = "audio shorter than transcript"
    BAD_WORD_TIMES = "word end <= start"
    MISSING_VAD = "missing voice activity"
    MISSING_FILE = "missing file"
    NOT_UTF8 = "not UTF-8"
    BAD_JSON = "invalid JSON"
    BAD_RECORD = "malformed record"
    UNPAIRED = "not two participants"
    BAD_ARCHIVE = "unreadable archive"


class InputError(PmcError):
    """One input item is unusable; names the file, where in it, and what is wrong.

    Args:
        path: The file at fault.
        message: What is wrong, in words.
        where: Where in the file (a line number, a JSON key), if known.
        problem: The kind of problem, for counting.
    """

    def __init__(
        self,
        path: str | Path,
        message: str,
        where: str | None = None,
        problem: Problem = Problem.BAD_RECORD,
    ) -> None:
        self.path = str(path)
        self.message = message
        self.where = where
        self.problem = problem
        location = f"{self.path}: {where}" if where else self.path
        super().__init__(f"{location}: {message}")


__all__ = [
    "InputError",
    "PmcError",
    "Problem",
]
