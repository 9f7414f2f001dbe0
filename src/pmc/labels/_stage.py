"""Running the label stage over a working directory: ``WORKDIR/labels/<conversation>.json``.

A conversation whose labels were already written from the same corpus file with the same
settings is not labelled again, so a killed run resumes where it stopped.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pmc import io
from pmc.asr import Transcriber, create_transcriber
from pmc.corpus import Channel, Word, conversation_paths, read_conversation
from pmc.errors import PmcError
from pmc.labels._engine import label_conversation
from pmc.labels._gapfill import empty_stretches, fill_gaps
from pmc.labels._settings import ENGINE_VERSION, EngineSettings
from pmc.labels._types import Labels
from pmc.labels._vap import Projector, flag_with_projection
from pmc.progress import Start

LABELS_DIR = "labels"
SELECTION_FILE = "selection.json"
INVENTORY_FILE = "inventory.json"
_NOT_CONVERSATIONS = {SELECTION_FILE, INVENTORY_FILE}


def labels_dir(workdir: Path) -> Path:
    """Where the label stage writes."""
    return workdir / LABELS_DIR


def label_paths(workdir: Path) -> list[Path]:
    """The stored labels files, sorted by conversation id."""
    folder = labels_dir(workdir)
    if not folder.is_dir():
        raise PmcError(f"{folder}: no labels here; run `pmc labels` first")
    return sorted(p for p in folder.glob("*.json") if p.name not in _NOT_CONVERSATIONS)


def read_labels(path: Path) -> Labels:
    """Load one labels file."""
    try:
        return Labels.from_dict(io.read_json(path))
    except (ValueError, KeyError, TypeError) as exc:
        raise PmcError(f"{path}: not a pmc labels file ({exc})") from None


@dataclass
class LabelRun:
    """What one run of the label stage did."""

    labelled: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)
    gap_fill_words: int = 0


def _settings(
    engine: EngineSettings, asr: str | None, projector: Projector | None, input_sha256: str
) -> dict[str, Any]:
    return {
        "engine_version": ENGINE_VERSION,
        "engine": engine.to_dict(),
        "gap_fill_asr": asr,
        "projector": projector.name if projector else None,
        "input_sha256": input_sha256,
    }


def run_labels(
    workdir: Path,
    *,
    engine: EngineSettings | None = None,
    asr: str | None = None,
    projector: Projector | None = None,
    progress: Start | None = None,
) -> LabelRun:
    """Label every conversation of the corpus in ``workdir``.

    Args:
        workdir: The working directory (reads ``corpus/``, writes ``labels/``).
        engine: Rule-engine settings (the paper's by default).
        asr: Gap-fill recogniser setting (see :func:`pmc.asr.create_transcriber`); None skips gap
            fill. The recogniser is loaded only when some conversation needs it.
        projector: Voice-activity projection plug-in for the review flags; None leaves them out.
        progress: Given the number of conversations, returns a function to call after each.
    """
    engine = engine or EngineSettings()
    paths = conversation_paths(workdir)
    transcriber: Transcriber | None = None
    run = LabelRun()
    advance = progress(len(paths)) if progress else None
    for path in paths:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        conversation = read_conversation(workdir, path)
        out = labels_dir(workdir) / f"{conversation.conversation_id}.json"
        settings = _settings(engine, asr, projector, digest)
        if out.exists() and read_labels(out).settings == settings:
            run.reused.append(conversation.conversation_id)
        else:
            filled: dict[Channel, tuple[Word, ...]] = {}
            if asr and any(empty_stretches(s) for s in conversation.speakers):
                transcriber = transcriber or create_transcriber(asr)
                conversation, filled = fill_gaps(conversation, transcriber)
            labels = label_conversation(conversation, engine)
            if projector is not None:
                labels = flag_with_projection(labels, projector.project(conversation))
            labels = replace(labels, settings=settings, filled_words=filled)
            io.write_json(out, labels.to_dict())
            run.labelled.append(conversation.conversation_id)
            run.gap_fill_words += sum(len(w) for w in filled.values())
        if advance:
            advance()
    return run
