"""The report's account of what produced its numbers, for ``results.json`` (``provenance``).

Gathered from each system's scoring record (``pmc.provenance``): pmc's version and commit, the
points, every card's digest, the score settings, and every model file with its package's
version and digest (docs/architecture.md "Provenance").
"""

from __future__ import annotations

from typing import Any

from pmc import __version__
from pmc.harness import Run
from pmc.provenance import digest, pmc_commit
from pmc.report._data import RunData
from pmc.scoring import read_provenance


def provenance_of(data: RunData) -> dict[str, Any]:
    """What produced the run's scores, per system, and every model file they used."""
    systems: dict[str, Any] = {}
    models: dict[tuple[str, str], dict[str, Any]] = {}
    for name in data.systems:
        scored = read_provenance(data.run_dir, name)
        systems[name] = {
            "card_sha256": digest(data.cards[name].to_dict()),
            "score_settings": None if scored is None else scored.score_settings,
            "scored_by": None
            if scored is None
            else {"pmc_version": scored.pmc_version, "pmc_commit": scored.pmc_commit},
        }
        for record in () if scored is None else scored.models:
            models[(record.model.value, record.path)] = record.to_dict()
    return {
        "pmc_version": __version__,
        "pmc_commit": pmc_commit(),
        "points_manifest_sha256": Run(data.run_dir).record.points_manifest_sha256,
        "systems": systems,
        "models": [models[k] for k in sorted(models)],
    }
