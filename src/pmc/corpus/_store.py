"""Reading and writing the corpus stage's output, ``WORKDIR/corpus/<conversation>.json``."""

from __future__ import annotations

from pathlib import Path

from pmc import io
from pmc.corpus._types import Conversation
from pmc.errors import PmcError

CORPUS_DIR = "corpus"
SUMMARY_FILE = "_import.json"
"""The import summary; a leading underscore keeps it apart from conversation files."""
RECALL_FACTS_FILE = "_recall_facts.json"
"""Conversation facts beside the corpus, by conversation id, for the points stage's recall
points (paper section 3.3): the demo writes its scripts' own; for another corpus, an LLM's."""


def corpus_dir(workdir: Path) -> Path:
    """Where the corpus stage writes."""
    return workdir / CORPUS_DIR


def write_conversation(workdir: Path, conversation: Conversation) -> Path:
    """Store one conversation, its audio paths relative to ``workdir`` where they lie inside it."""
    path = corpus_dir(workdir) / f"{conversation.conversation_id}.json"
    io.write_json(path, conversation.with_audio_paths(workdir, relative=True).to_dict())
    return path


def conversation_paths(workdir: Path) -> list[Path]:
    """The stored conversations' files, sorted by id."""
    folder = corpus_dir(workdir)
    if not folder.is_dir():
        raise PmcError(f"{folder}: no corpus here; run `pmc corpus import` first")
    return sorted(p for p in folder.glob("*.json") if not p.name.startswith("_"))


def read_conversation(workdir: Path, path: Path) -> Conversation:
    """Load one stored conversation with its audio paths resolved against ``workdir``."""
    try:
        conversation = Conversation.from_dict(io.read_json(path))
    except (ValueError, KeyError, TypeError) as exc:
        raise PmcError(f"{path}: not a pmc conversation file ({exc})") from None
    return conversation.with_audio_paths(workdir, relative=False)


def read_corpus(workdir: Path) -> list[Conversation]:
    """Every stored conversation, sorted by id."""
    return [read_conversation(workdir, p) for p in conversation_paths(workdir)]
