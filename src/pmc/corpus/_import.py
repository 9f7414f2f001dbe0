"""Running a source into a working directory: read, check, filter, store, count what happened."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pmc import io
from pmc.corpus._records import WordStats
from pmc.corpus._source import CorpusSource, Filtered, FilterReason, Skipped
from pmc.corpus._store import SUMMARY_FILE, corpus_dir, write_conversation
from pmc.corpus._types import Conversation, SourceKind
from pmc.errors import InputError, Problem
from pmc.progress import Start

IMPORT_SUMMARY_SCHEMA_VERSION = 1

MIN_DURATION_S = 420.0
"""Seamless Interaction sessions of at least seven minutes (paper section 3.1)."""


@dataclass
class ImportSummary:
    """What one import did: what it stored, left out, and could not read, with reasons."""

    source: SourceKind
    min_duration_s: float
    imported: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    filtered: list[Filtered] = field(default_factory=list)
    word_stats: WordStats = field(default_factory=WordStats)

    @property
    def readable(self) -> int:
        """Conversations read in full: imported, or left out only for their length."""
        too_short = sum(f.reason is FilterReason.TOO_SHORT for f in self.filtered)
        return len(self.imported) + too_short

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form, with the schema version."""
        return {
            "schema_version": IMPORT_SUMMARY_SCHEMA_VERSION,
            "source": self.source.value,
            "min_duration_s": self.min_duration_s,
            "imported": sorted(self.imported),
            "skipped": [
                {"item": s.item, "problem": s.problem.value, "message": s.message}
                for s in sorted(self.skipped, key=lambda s: s.item)
            ],
            "skipped_by_problem": dict(
                sorted(Counter(s.problem.value for s in self.skipped).items())
            ),
            "filtered": dict(sorted(Counter(f.reason.value for f in self.filtered).items())),
            "words_dropped": {
                "untimed": self.word_stats.untimed,
                "end_not_after_start": self.word_stats.inverted,
            },
        }


def import_corpus(
    source: CorpusSource,
    workdir: Path,
    *,
    min_duration_s: float = MIN_DURATION_S,
    on_skip: Callable[[Skipped], None] | None = None,
    progress: Start | None = None,
) -> ImportSummary:
    """Read every conversation ``source`` finds and store the good ones under ``workdir``.

    A bad conversation is skipped and counted with its reason; nothing else is lost. Each
    conversation file is written atomically, so an interrupted import can simply be rerun.

    Args:
        source: The reader.
        workdir: The working directory; conversations go to ``workdir/corpus/``.
        min_duration_s: Leave out conversations shorter than this (measured on the audio).
        on_skip: Called for each skipped item as it is found (to print its message).
        progress: Given the number of candidates, returns a function to call after each one.
    """
    scan = source.scan()
    summary = ImportSummary(
        source.kind, min_duration_s, filtered=list(scan.filtered), word_stats=scan.word_stats
    )

    def skip(item: str, problem: Problem, message: str) -> None:
        skipped = Skipped(_printable(item), problem, _printable(message))
        summary.skipped.append(skipped)
        if on_skip:
            on_skip(skipped)

    for skipped in scan.skipped:
        skip(skipped.item, skipped.problem, skipped.message)
    advance = progress(len(scan.candidates)) if progress else None
    for candidate in scan.candidates:
        try:
            conversation = candidate.load()
            _check_file_names(conversation)
        except InputError as exc:
            skip(candidate.item, exc.problem, str(exc))
        else:
            if conversation.duration_s < min_duration_s:
                summary.filtered.append(Filtered(candidate.item, FilterReason.TOO_SHORT))
            else:
                write_conversation(workdir, conversation)
                summary.imported.append(conversation.conversation_id)
        if advance:
            advance()
    io.write_json(corpus_dir(workdir) / SUMMARY_FILE, summary.to_dict())
    return summary


def _printable(text: str) -> str:
    r"""``text`` with what cannot be written as UTF-8 escaped (``\udcff``).

    Python reads a file name that is not UTF-8 into lone surrogates, which can be neither
    printed nor written to the summary as they are.
    """
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _check_file_names(conversation: Conversation) -> None:
    """Reject audio whose file name cannot be stored (the corpus files are UTF-8 JSON)."""
    for speaker in conversation.speakers:
        path = speaker.audio.path
        if _printable(path) != path:
            raise InputError(
                _printable(path),
                "file name is not valid UTF-8 (rename the file or its folders)",
                problem=Problem.BAD_RECORD,
            )
