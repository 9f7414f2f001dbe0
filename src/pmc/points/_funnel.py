"""The curation funnel: how many boundaries survived each stage, per kind (paper Table 4)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pmc.points._types import PointKind

FUNNEL_SCHEMA_VERSION = 3
"""2: the review's rows (``rejected``, ``reviewed``) and ``require_review``. 3: the rows of the
label-only and audio filters are ``label_filters`` and ``audio_filters`` (were ``..._gates``:
"gate" is the speech gate's name, docs/architecture.md)."""
DEFAULT_DRAW = 300
"""The run reported in the paper draws 300 points of each kind (section 3.3)."""


@dataclass
class Funnel:
    """How many boundaries survived each stage, per kind (the paper's Table 4)."""

    conversations: int = 0
    candidates: Counter[str] = field(default_factory=Counter)
    label_filters: Counter[str] = field(default_factory=Counter)
    audio_filters: Counter[str] = field(default_factory=Counter)
    capped: Counter[str] = field(default_factory=Counter)
    judged: Counter[str] = field(default_factory=Counter)
    reviewed: Counter[str] = field(default_factory=Counter)
    drawn: Counter[str] = field(default_factory=Counter)
    judge: str = "none: heuristic ranking"
    draw: int = DEFAULT_DRAW
    seed: int = 0
    require_review: int = 0
    """Windows kept only when this many reviewers accept them (0: unreviewed windows stay)."""
    rejected: Counter[str] = field(default_factory=Counter)
    """Windows a reviewer rejected, by point kind."""
    review_problems: list[str] = field(default_factory=list)
    """Review log lines that could not be read (each names its file and line)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form, with the schema version."""
        stages = (
            "candidates",
            "label_filters",
            "audio_filters",
            "capped",
            "judged",
            "rejected",
            "reviewed",
            "drawn",
        )
        return {
            "schema_version": FUNNEL_SCHEMA_VERSION,
            "conversations": self.conversations,
            "judge": self.judge,
            "draw": self.draw,
            "seed": self.seed,
            "require_review": self.require_review,
            "kinds": {
                kind.value: {stage: getattr(self, stage)[kind.value] for stage in stages}
                for kind in PointKind
            },
        }
