"""The points stage's files: where they are, and reading the manifest and the windows back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pmc.errors import PmcError
from pmc.points._types import Point
from pmc.review import Window

POINTS_DIR = "points"
MANIFEST_FILE = "manifest.jsonl"
FUNNEL_FILE = "funnel.json"
WINDOWS_FILE = "windows.jsonl"
"""Every pause and turn-end window the judge left, drawn or not, for ``pmc review``."""


def points_dir(workdir: Path) -> Path:
    """Where the points stage writes."""
    return workdir / POINTS_DIR


def read_points(workdir: Path) -> list[Point]:
    """The manifest's points."""
    return [Point.from_dict(d) for d in _records(points_dir(workdir) / MANIFEST_FILE, "points")]


def read_windows(workdir: Path) -> list[Window]:
    """Every pause and turn-end window of the last ``pmc points``, drawn or not."""
    return [Window.from_dict(d) for d in _records(points_dir(workdir) / WINDOWS_FILE, "windows")]


def _records(path: Path, what: str) -> list[dict[str, Any]]:
    if not path.exists():
        raise PmcError(f"{path}: no {what} here; run `pmc points` first")
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line]
