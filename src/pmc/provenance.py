"""What produced a system's scores: pmc, the points, the card, the settings and the model files.

Scoring writes one record per system beside its scores (``scores/<system>.provenance.json``) and
the report gathers them into ``results.json``, so every number can be traced to exactly what
made it (docs/architecture.md "Provenance"). Digests are of canonical JSON and of file bytes,
so two machines with the same versions record the same hashes.
"""

from __future__ import annotations

import functools
import hashlib
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pmc import __version__, io
from pmc.models import FileRecord

PROVENANCE_SCHEMA_VERSION = 1


@functools.cache
def pmc_commit() -> str | None:
    """The commit pmc runs from when it runs from a git checkout (None for an installed pmc)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists() or not (root / "pyproject.toml").is_file():
        return None
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


def digest(record: Any) -> str:
    """sha256 of a record's canonical JSON (sorted keys): the same record, the same digest."""
    return hashlib.sha256(io.json_line(record).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Provenance:
    """What one system's scores were computed from.

    Attributes:
        system: The system card's name.
        pmc_version: The pmc that scored them, and ``pmc_commit`` its commit where known.
        points_manifest_sha256: The points the run was made on.
        card_sha256: The digest of the card as the run recorded it.
        score_settings: The scoring settings (recogniser, gate, judge, embedding, metrics).
        models: Every model file scoring loaded, with its package's version and digest.
    """

    system: str
    pmc_version: str
    pmc_commit: str | None
    points_manifest_sha256: str
    card_sha256: str
    score_settings: dict[str, Any]
    models: tuple[FileRecord, ...] = field(default=())
    schema_version: int = PROVENANCE_SCHEMA_VERSION

    @classmethod
    def now(
        cls,
        system: str,
        points: str,
        card: dict[str, Any],
        settings: dict[str, Any],
        models: tuple[FileRecord, ...],
    ) -> Provenance:
        """The record for scores made in this process."""
        return cls(system, __version__, pmc_commit(), points, digest(card), settings, models)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "schema_version": self.schema_version,
            "system": self.system,
            "pmc_version": self.pmc_version,
            "pmc_commit": self.pmc_commit,
            "points_manifest_sha256": self.points_manifest_sha256,
            "card_sha256": self.card_sha256,
            "score_settings": self.score_settings,
            "models": [m.to_dict() for m in self.models],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Provenance:
        """Inverse of :meth:`to_dict`."""
        version = io.schema_version(data, PROVENANCE_SCHEMA_VERSION, "provenance")
        return cls(
            str(data["system"]),
            str(data["pmc_version"]),
            data.get("pmc_commit"),
            str(data["points_manifest_sha256"]),
            str(data["card_sha256"]),
            dict(data["score_settings"]),
            tuple(FileRecord.from_dict(m) for m in data.get("models", ())),
            version,
        )
