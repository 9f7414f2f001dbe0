"""The progress hook a long stage takes, so the CLI can draw a bar without the stage knowing.

A stage calls ``start(total)`` once it knows how many items it has, then the function that
returns once per item done. Shared below the stages, like :mod:`pmc.io`.
"""

from __future__ import annotations

from collections.abc import Callable

Advance = Callable[[], None]
"""Called once per item done."""
Start = Callable[[int], Advance]
"""``start(total)``: says how many items there are; returns the :data:`Advance` to call."""


__all__ = [
    "Advance",
    "Start",
]
