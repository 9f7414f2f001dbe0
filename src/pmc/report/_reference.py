"""Which systems of a run are reference rows (paper section 4.3, DESIGN "Metrics")."""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class Reference(StrEnum):
    """The reference rows reported beside the systems under test."""

    NEVER_SPEAK = "never speak"
    ALWAYS_SPEAK = "always speak"
    PERSON = "the person, similarity ceiling"
    SHUFFLED = "shuffled person, similarity floor"


def reference_of(card: dict[str, Any]) -> Reference | None:
    """The reference a recorded card plays, or None for a system under test."""
    adapter = card.get("adapter")
    if adapter == "never-speak":
        return Reference.NEVER_SPEAK
    if adapter == "always-speak":
        return Reference.ALWAYS_SPEAK
    if adapter == "person":
        shuffled = card.get("params", {}).get("reference") == "shuffled"
        return Reference.SHUFFLED if shuffled else Reference.PERSON
    return None
