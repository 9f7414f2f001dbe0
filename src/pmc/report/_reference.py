"""Which systems of a run are reference rows (paper section 4.3, docs/architecture.md "Metrics").

The report does not know the reference systems by name: it rebuilds each card the run
recorded and asks its adapter (:func:`pmc.systems.reference_row_of`).
"""

from __future__ import annotations

from typing import Any

from pmc.systems import ReferenceRow, SystemCard, reference_row_of


def reference_of(card: dict[str, Any]) -> ReferenceRow | None:
    """The reference row a recorded card plays, or None for a system under test."""
    return reference_row_of(SystemCard.from_dict(card))
