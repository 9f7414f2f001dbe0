"""A trade-off curve: hold rate at pauses against turn-end decision latency, per setting."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pmc import io

CURVE_SCHEMA_VERSION = 2
"""2: a setting may be a word (``setting``: semantic VAD's eagerness), with no silence window,
and a detector may have no threshold."""
READABLE_VERSIONS = (1, 2)
CURVES_DIR = "curves"
"""Where a working directory keeps its curves (``WORKDIR/curves/<card>.json``)."""


@dataclass(frozen=True)
class CurvePoint:
    """One setting's decisions over the points.

    Attributes:
        silence_ms: The silence window (Smart Turn: its VAD's stop); None where the setting is
            a word.
        threshold: The speech threshold (Smart Turn: the model's, on its probability); None
            where the detector has none (semantic VAD, Gemini).
        pauses: Pause points replayed.
        held: Of them, those where no reply's speech fell inside the pause.
        turn_ends: Turn-end points replayed.
        decided: Of them, those with an endpoint at or after the turn end (within the tail).
        decision_latency_s: The median of those endpoints' delay after the turn end.
        cards: Bundled cards with exactly this setting.
        setting: A setting that is a word, not a window (semantic VAD's eagerness), or "".
    """

    silence_ms: float | None
    threshold: float | None
    pauses: int
    held: int
    turn_ends: int
    decided: int
    decision_latency_s: float | None
    cards: tuple[str, ...] = ()
    setting: str = ""

    @property
    def label(self) -> str:
        """The setting as a reader names it: the word, or the window in ms."""
        return self.setting or f"{self.silence_ms:g} ms"

    @property
    def hold_rate(self) -> float | None:
        """The share of pauses held (None without pauses)."""
        return self.held / self.pauses if self.pauses else None

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "silence_ms": self.silence_ms,
            "threshold": self.threshold,
            "pauses": self.pauses,
            "held": self.held,
            "hold_rate": self.hold_rate,
            "turn_ends": self.turn_ends,
            "decided": self.decided,
            "decision_latency_s": self.decision_latency_s,
            "cards": list(self.cards),
            "setting": self.setting,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CurvePoint:
        """Inverse of :meth:`to_dict`."""
        latency = data.get("decision_latency_s")
        silence = data.get("silence_ms")
        threshold = data.get("threshold")
        return cls(
            None if silence is None else float(silence),
            None if threshold is None else float(threshold),
            int(data["pauses"]),
            int(data["held"]),
            int(data["turn_ends"]),
            int(data["decided"]),
            None if latency is None else float(latency),
            tuple(data.get("cards", ())),
            str(data.get("setting", "")),
        )


@dataclass(frozen=True)
class Curve:
    """A sweep of one card's settings over a working directory's points.

    Attributes:
        card: The card swept (its other settings held).
        adapter: Its adapter (the report marks runs of the same adapter on the curve).
        points_manifest_sha256: The points it was replayed on.
        settings: One point of the curve per setting, in the order swept.
        person_latency_s: The person's median gap at the same turn ends (they hold every pause,
            as the points were chosen).
    """

    card: str
    adapter: str
    points_manifest_sha256: str
    settings: tuple[CurvePoint, ...]
    person_latency_s: float | None
    schema_version: int = CURVE_SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "schema_version": self.schema_version,
            "card": self.card,
            "adapter": self.adapter,
            "points_manifest_sha256": self.points_manifest_sha256,
            "person_latency_s": self.person_latency_s,
            "settings": [s.to_dict() for s in self.settings],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Curve:
        """Inverse of :meth:`to_dict`."""
        version = int(data.get("schema_version", -1))
        if version not in READABLE_VERSIONS:  # version 1 is 2 without words for settings
            io.schema_version(data, CURVE_SCHEMA_VERSION, "curve")
        person = data.get("person_latency_s")
        return cls(
            str(data["card"]),
            str(data["adapter"]),
            str(data["points_manifest_sha256"]),
            tuple(CurvePoint.from_dict(s) for s in data["settings"]),
            None if person is None else float(person),
            version,
        )
