"""System cards: one TOML file per configuration (docs/architecture.md "Systems").

A card names the adapter, the family, where the system lives and which environment variable
holds its key (never the key), the audio format, the frame size, turn detection and how many
rollouts may run at once. Its content is written into every rollout, so a run can be rebuilt.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from pmc.errors import InputError
from pmc.io import schema_version

CARD_SCHEMA_VERSION = 1
FRAME_MS = {"local": 20, "hosted": 20, "duplex": 80}
"""Default frame sizes: 20 ms for hosted systems, 80 ms for full-duplex (docs/architecture.md
"Protocol")."""


class Family(StrEnum):
    """How a system takes turns, which decides its protocol (docs/architecture.md "Protocol")."""

    LOCAL = "local"
    HOSTED = "hosted"
    DUPLEX = "duplex"


@dataclass(frozen=True)
class SystemCard:
    """One system configuration.

    Attributes:
        name: The card's name (its file name without ``.toml``).
        adapter: The registered adapter that speaks to it.
        family: Local, hosted or full-duplex.
        description: One line for reports.
        endpoint: Where a remote system lives (None for local ones).
        api_key_env: The environment variable holding its key (never the key itself).
        sample_rate: Audio rate in both directions.
        frame_ms: Live input frame length.
        concurrency: Rollouts that may run at once against it.
        turn_detection: The endpointer settings, as the adapter understands them.
        params: Anything else the adapter takes.
    """

    name: str
    adapter: str
    family: Family
    description: str = ""
    endpoint: str | None = None
    api_key_env: str | None = None
    sample_rate: int = 24_000
    frame_ms: int = 20
    concurrency: int = 1
    turn_detection: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    schema_version: int = CARD_SCHEMA_VERSION

    @property
    def frame_samples(self) -> int:
        """Samples in one input frame."""
        return self.sample_rate * self.frame_ms // 1000

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (what each rollout records)."""
        return {
            "schema_version": self.schema_version,
            "name": self.name,
            "adapter": self.adapter,
            "family": self.family.value,
            "description": self.description,
            "endpoint": self.endpoint,
            "api_key_env": self.api_key_env,
            "sample_rate": self.sample_rate,
            "frame_ms": self.frame_ms,
            "concurrency": self.concurrency,
            "turn_detection": self.turn_detection,
            "params": self.params,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SystemCard:
        """The card a rollout or ``run.json`` recorded (:meth:`to_dict`'s form)."""
        version = schema_version(data, CARD_SCHEMA_VERSION, "system card")
        return cls(
            name=data["name"],
            adapter=data["adapter"],
            family=Family(data["family"]),
            description=data.get("description", ""),
            endpoint=data.get("endpoint"),
            api_key_env=data.get("api_key_env"),
            sample_rate=data.get("sample_rate", 24_000),
            frame_ms=data.get("frame_ms", FRAME_MS[data["family"]]),
            concurrency=data.get("concurrency", 1),
            turn_detection=dict(data.get("turn_detection", {})),
            params=dict(data.get("params", {})),
            schema_version=version,
        )


_KNOWN = {
    "adapter",
    "family",
    "description",
    "endpoint",
    "api_key_env",
    "sample_rate",
    "frame_ms",
    "concurrency",
    "turn_detection",
    "params",
}


def load_card(path: Path) -> SystemCard:
    """Read and check one card; any problem names the file and the key."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(path, f"invalid TOML ({exc})") from None
    except OSError as exc:
        raise InputError(path, f"cannot read ({exc.strerror})") from None
    unknown = sorted(set(data) - _KNOWN)
    if unknown:
        raise InputError(path, f"unknown key(s): {', '.join(unknown)}")
    for key in ("adapter", "family"):
        if not isinstance(data.get(key), str):
            raise InputError(path, f"'{key}' is required and must be a string")
    try:
        family = Family(data["family"])
    except ValueError:
        raise InputError(path, f"family must be one of {', '.join(Family)}", "family") from None
    for key, kind in (("sample_rate", int), ("frame_ms", int), ("concurrency", int)):
        if key in data and (not isinstance(data[key], kind) or data[key] <= 0):
            raise InputError(path, f"'{key}' must be a positive integer", key)
    card = SystemCard(
        name=path.stem,
        adapter=data["adapter"],
        family=family,
        description=str(data.get("description", "")),
        endpoint=data.get("endpoint"),
        api_key_env=data.get("api_key_env"),
        sample_rate=data.get("sample_rate", 24_000),
        frame_ms=data.get("frame_ms", FRAME_MS[family.value]),
        concurrency=data.get("concurrency", 1),
        turn_detection=dict(data.get("turn_detection", {})),
        params=dict(data.get("params", {})),
    )
    if card.sample_rate * card.frame_ms % 1000:
        raise InputError(path, "a frame must be a whole number of samples", "frame_ms")
    return card
