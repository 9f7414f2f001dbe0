"""The interface every corpus reader implements, and what a scan finds."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar

from pmc.corpus._records import WordStats
from pmc.corpus._types import Conversation, SourceKind
from pmc.errors import Problem


class FilterReason(StrEnum):
    """Why a readable conversation was left out on purpose (not an error)."""

    LABEL = "other label"
    TOO_SHORT = "shorter than minimum"


@dataclass(frozen=True)
class Skipped:
    """An item that could not be read, with the one-line message that says why."""

    item: str
    problem: Problem
    message: str


@dataclass(frozen=True)
class Filtered:
    """A conversation left out by a filter."""

    item: str
    reason: FilterReason


@dataclass(frozen=True)
class FoundConversation:
    """A conversation found by a scan; ``load`` reads and checks it, raising InputError if bad."""

    item: str
    load: Callable[[], Conversation]


@dataclass
class Scan:
    """What a source found before reading any conversation in full."""

    candidates: list[FoundConversation] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    filtered: list[Filtered] = field(default_factory=list)
    word_stats: WordStats = field(default_factory=WordStats)


class CorpusSource(ABC):
    """A reader that turns one kind of corpus into :class:`Conversation` s."""

    kind: ClassVar[SourceKind]

    @abstractmethod
    def scan(self) -> Scan:
        """Find the conversations; cheap (headers and file names), so a progress bar can follow."""
