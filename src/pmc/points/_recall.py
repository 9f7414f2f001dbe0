"""Recall points: history prefixes, the conversation fact, and the fact-recall control (3.3)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pmc import io
from pmc.corpus import RECALL_FACTS_FILE, Channel, corpus_dir
from pmc.errors import PmcError
from pmc.labels import LabelKind, Labels

PREFIXES_S = (30.0, 60.0, 90.0, 120.0)
"""History lengths at which memory is tested (paper section 3.3)."""
ASKER = Channel.B
"""The question comes from speaker 2 (B); the system plays speaker 1 (A) (paper section 3.3)."""


@dataclass(frozen=True)
class RecallFact:
    """A question with its gold answer, and how to voice it."""

    question: str
    answer: str
    fact: str = ""
    fact_end_conv_s: float = 0.0
    """The history must reach past the fact (0 for the general-knowledge control)."""
    voice_pitch: float = 1.0


def fact_bank() -> list[dict[str, str]]:
    """The twelve general-knowledge questions of the fact-recall control."""
    text = resources.files("pmc.points").joinpath("fact_bank.json").read_text(encoding="utf-8")
    bank: list[dict[str, str]] = json.loads(text)
    return bank


def control_fact(conversation_id: str) -> RecallFact:
    """The control question assigned to a conversation by a stable hash of its id."""
    bank = fact_bank()
    entry = bank[int(hashlib.sha256(conversation_id.encode()).hexdigest(), 16) % len(bank)]
    return RecallFact(entry["question"], entry["answer"])


def read_facts(workdir: Path) -> dict[str, dict[str, Any]]:
    """Conversation facts stored beside the corpus, by conversation id (empty when none)."""
    path = corpus_dir(workdir) / RECALL_FACTS_FILE
    if not path.exists():
        return {}
    try:
        data: dict[str, dict[str, Any]] = io.read_json(path)
    except ValueError as exc:
        raise PmcError(f"{path}: invalid JSON ({exc})") from None
    return data


def conversation_fact(entry: dict[str, Any]) -> RecallFact:
    """A stored conversation fact as a recall question."""
    return RecallFact(
        question=str(entry["question"]),
        answer=str(entry["answer"]),
        fact=str(entry.get("fact", "")),
        fact_end_conv_s=float(entry.get("fact_end_conv_s", 0.0)),
        voice_pitch=float(entry.get("voice_pitch", 1.0)),
    )


def prefix_ends(labels: Labels, after_s: float = 0.0) -> list[tuple[float, float]]:
    """``(prefix, history end)`` for each prefix that a completed turn ends inside.

    The history ends at the last end of turn at or before the prefix (and after ``after_s``); a
    prefix where no turn has completed is skipped.
    """
    ends = sorted(x.start_conv_s for x in labels.of(LabelKind.END_OF_TURN))
    out = []
    for prefix in PREFIXES_S:
        inside = [t for t in ends if after_s <= t <= prefix]
        if inside:
            out.append((prefix, inside[-1]))
    return out
