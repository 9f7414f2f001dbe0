"""The cache of a track's window decodes, kept while the track and the decoding stay the same."""

from __future__ import annotations

from pathlib import Path

from pmc import io
from pmc.calibration._settings import LabelSettings
from pmc.calibration._tracks import TrackKey
from pmc.calibration._windows import WindowDecode

WINDOW_LABELS_SCHEMA_VERSION = 1
"""Of the cached window decodes (``calibration/labels/<system>/<point>/<k>.json``)."""

Decoded = tuple[int, list[WindowDecode]]
"""A track's length in samples and its window decodes."""


def read_cached(path: Path, sha: str, settings: LabelSettings) -> Decoded | None:
    """The cached decodes if they were made from the same track with the same decoding."""
    if not path.exists():
        return None
    try:
        data = io.read_json(path)
        if (
            data.get("schema_version") != WINDOW_LABELS_SCHEMA_VERSION
            or data.get("played_sha256") != sha
            or data.get("decoding") != settings.decoding()
        ):
            return None
        return int(data["samples"]), [WindowDecode.from_dict(w) for w in data["windows"]]
    except (ValueError, KeyError, TypeError):
        return None  # derived data, written atomically; unreadable means decode again


def store(path: Path, key: TrackKey, sha: str, settings: LabelSettings, decoded: Decoded) -> None:
    """Cache a track's decodes with what they were made from."""
    samples, windows = decoded
    io.write_json(
        path,
        {
            "schema_version": WINDOW_LABELS_SCHEMA_VERSION,
            "system": key.system,
            "point_id": key.point_id,
            "rollout": key.rollout,
            "played_sha256": sha,
            "samples": samples,
            "decoding": settings.decoding(),
            "windows": [w.to_dict() for w in windows],
        },
    )
