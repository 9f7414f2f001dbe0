"""PeopleMakingConversation: a benchmark of how naturally real-time speech systems converse.

The pipeline's entry points are here, for a notebook or a script as for ``pmc``'s commands:
``run_demo_pipeline`` runs every stage on the bundled demo corpus, as ``pmc demo`` does; stage
by stage, ``import_corpus``, ``run_labels``, ``run_selection``, ``run_points``,
``run_rollouts``, ``run_scoring`` and ``build_report`` (docs/architecture.md, section 1). Each is
imported from its stage's package on first use, so ``import pmc`` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

ENTRY_POINTS = {
    "run_demo_pipeline": "pmc.pipeline",
    "import_corpus": "pmc.corpus",
    "run_labels": "pmc.labels",
    "run_selection": "pmc.labels",
    "run_points": "pmc.points",
    "run_rollouts": "pmc.harness",
    "run_scoring": "pmc.scoring",
    "build_report": "pmc.report",
}
"""Each entry point and the package it belongs to (and is documented in)."""


def __getattr__(name: str) -> Any:
    """An entry point, imported from its package when first asked for."""
    package = ENTRY_POINTS.get(name)
    if package is None:
        raise AttributeError(f"module 'pmc' has no attribute {name!r}")
    return getattr(importlib.import_module(package), name)


__all__ = ["ENTRY_POINTS", "__version__", *ENTRY_POINTS]
