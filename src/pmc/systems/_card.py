"""System cards: one TOML file per configuration (docs/architecture.md "Systems").

A card names the adapter, the family, where the system lives and which environment variable
holds its key (never the key), the audio format, the frame size, turn detection and how many
rollouts may run at once. Its content is written into every rollout, so a run can be rebuilt.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from pmc import io
from pmc.errors import InputError, PmcError
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
        params: The adapter's own parameters (its ``PARAMS`` record says which it takes).
        point_kinds: The point kinds it is put at (None: every kind).
        preload_timeout_s: How long its preload may take (None: the handshake's limit).
        recall_latency_ms: The person's answer latency at recall points, where no recording
            has one (None: the protocol's).
        reference: Which reply the person replays: ``own`` or ``shuffled`` (None: own).
        ray_resources: Ray resources each of its streaming workers takes (none: the default
            pool).
        endpointing: Where a hosted system's own endpointer decides when the live turn ends:
            ``pauses`` (None, the paper's protocol: at turn-end and recall points the harness
            ends the input itself) or ``all`` (its endpointer decides at every point).

    The last six are protocol settings that the harness reads. A card file writes them in its
    ``[params]`` table, and :meth:`to_dict` keeps them there, so cards and run records read as
    they always have; a card made in code may give them in ``params`` too.
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
    point_kinds: tuple[str, ...] | None = None
    preload_timeout_s: float | None = None
    recall_latency_ms: float | None = None
    reference: str | None = None
    ray_resources: dict[str, float] = field(default_factory=dict)
    endpointing: str | None = None
    schema_version: int = CARD_SCHEMA_VERSION

    def __post_init__(self) -> None:
        """Take the protocol settings out of ``params``, checked (a ValueError says which)."""
        given = {k: self.params[k] for k in PROTOCOL_PARAMS if k in self.params}
        if not given:
            return
        fields = _protocol_fields(given)
        object.__setattr__(self, "params", {k: v for k, v in self.params.items() if k not in given})
        for key, value in fields.items():
            object.__setattr__(self, key, value)

    def protocol_params(self) -> dict[str, Any]:
        """The protocol settings this card sets, as its ``[params]`` table writes them."""
        out: dict[str, Any] = {}
        if self.point_kinds is not None:
            out["point_kinds"] = list(self.point_kinds)
        for key in ("preload_timeout_s", "recall_latency_ms", "reference", "endpointing"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.ray_resources:
            out["ray_resources"] = dict(self.ray_resources)
        return out

    @property
    def endpoints_everywhere(self) -> bool:
        """Whether its own endpointer decides at every point, not only at pauses."""
        return self.endpointing == "all"

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
            "params": {**self.params, **self.protocol_params()},
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


PROTOCOL_PARAMS = (
    "point_kinds",
    "preload_timeout_s",
    "recall_latency_ms",
    "reference",
    "ray_resources",
    "endpointing",
)
"""The keys of a card's ``[params]`` that are protocol settings, typed fields of the card."""

ENDPOINTING = ("pauses", "all")
"""What ``params.endpointing`` may say: the system's endpointer decides at pauses only (the
paper's protocol), or at every point."""
REFERENCES = ("own", "shuffled")
"""What ``params.reference`` may say: the person replays its own reply, or another point's."""


def _protocol_fields(given: dict[str, Any]) -> dict[str, Any]:
    """The protocol settings as the card's fields; a ValueError names the one that is wrong."""
    out: dict[str, Any] = {}
    for key, value in given.items():
        if key == "point_kinds":
            if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"params.point_kinds must be a list of point kinds, not {value!r}")
            out[key] = tuple(value)
        elif key in ("preload_timeout_s", "recall_latency_ms"):
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ValueError(f"params.{key} must be a number of at least 0, not {value!r}")
            out[key] = float(value) if isinstance(value, float) else value
        elif key == "reference":
            if value not in REFERENCES:
                raise ValueError(f"params.reference is 'own' or 'shuffled', not {value!r}")
            out[key] = value
        elif key == "endpointing":
            if value not in ENDPOINTING:
                raise ValueError(f"params.endpointing is 'pauses' or 'all', not {value!r}")
            out[key] = value
        elif key == "ray_resources":
            if not isinstance(value, dict) or not all(
                isinstance(k, str) and isinstance(v, int | float) and not isinstance(v, bool)
                for k, v in value.items()
            ):
                raise ValueError(
                    f"params.ray_resources must be a table of resource names to amounts, "
                    f"not {value!r}"
                )
            out[key] = dict(value)
    return out


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
    data = io.read_toml(path)
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
    params = data.get("params", {})
    if not isinstance(params, dict):
        raise InputError(path, "'params' must be a table", "params")
    try:
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
            params=dict(params),
        )
    except ValueError as exc:
        key = str(exc).split(" ", 1)[0].removeprefix("params.")
        raise InputError(path, str(exc), f"params.{key}") from None
    if card.sample_rate * card.frame_ms % 1000:
        raise InputError(path, "a frame must be a whole number of samples", "frame_ms")
    _check_params(card, path)
    return card


def _check_params(card: SystemCard, path: Path) -> None:
    """Refuse a parameter the card's adapter does not take, or one of the wrong type.

    An adapter that is not registered here (an optional extra, a package not installed) is
    checked when a run first asks for it.
    """
    from pmc.systems._adapter import ADAPTERS  # the registry knows the adapters' records
    from pmc.systems._params import ParamError, parse_params

    try:
        factory = ADAPTERS.get(card.adapter)
    except PmcError:
        return  # a package's entry point that does not load: said when it is used
    if factory is None:
        return
    try:
        parse_params(factory.PARAMS, card.params, card.adapter)
    except ParamError as exc:
        raise InputError(path, str(exc), f"params.{exc.key}") from None
