"""What a condition is: a named, parameterised, seeded change to what a system hears.

docs/conditions.md. A run names its conditions (``babble-10db``, ``telephone``, or with a
parameter changed, ``babble-10db:snr_db=0``); each is a :class:`Condition`, recorded in
``run.json`` by :meth:`Condition.to_dict`, so a rerun applies exactly the same one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pmc.errors import PmcError

CONDITION_SCHEMA_VERSION = 1


class ConditionKind(StrEnum):
    """What a condition does to the system's input."""

    NOISE = "noise"
    """Stationary noise at a set SNR, shaped like a room or a car."""
    BABBLE = "babble"
    """Other people talking, from other conversations of the corpus, at a set SNR."""
    ECHO = "echo"
    """The system's own played output fed back into its input, delayed and attenuated."""
    TELEPHONE = "telephone"
    """A phone line's band and the 8 kHz G.711 mu-law round trip."""
    NETWORK = "network"
    """Input frames delivered with seeded jitter and loss."""


class NoiseColour(StrEnum):
    """The spectrum of stationary noise."""

    ROOM = "room"
    """Pink (-3 dB per octave): the diffuse hum of a room with people and machines in it."""
    CAR = "car"
    """Brown (-6 dB per octave): a car's engine and road noise, mostly below 500 Hz."""


class Concealment(StrEnum):
    """What a receiver puts where a frame was lost."""

    SILENCE = "silence"
    """Zeros, as a receiver without concealment plays."""
    REPEAT = "repeat"
    """The last frame that arrived, again, as simple packet loss concealment does."""


PRESETS: dict[str, tuple[ConditionKind, dict[str, Any]]] = {
    "room-10db": (ConditionKind.NOISE, {"colour": "room", "snr_db": 10.0}),
    "car-10db": (ConditionKind.NOISE, {"colour": "car", "snr_db": 10.0}),
    "babble-10db": (ConditionKind.BABBLE, {"snr_db": 10.0, "voices": 4}),
    "babble-0db": (ConditionKind.BABBLE, {"snr_db": 0.0, "voices": 4}),
    "echo": (ConditionKind.ECHO, {"delay_ms": 100.0, "gain_db": -10.0}),
    "telephone": (ConditionKind.TELEPHONE, {"low_hz": 300.0, "high_hz": 3400.0}),
    "network": (
        ConditionKind.NETWORK,
        {"jitter_ms": 30.0, "loss": 0.02, "concealment": "silence"},
    ),
}
"""The named conditions and their default parameters (where each number comes from:
docs/conditions.md)."""


@dataclass(frozen=True)
class Condition:
    """One condition as a run applies it.

    Attributes:
        name: What the run called it (a preset's name).
        kind: What it does.
        params: Its parameters (the preset's, with any the run changed).
        seed: Seeds its randomness (noise, babble, jitter, loss); a rollout mixes it with its
            own identity, so every rollout differs and every rerun is the same.
    """

    name: str
    kind: ConditionKind
    params: dict[str, Any] = field(default_factory=dict)
    seed: int = 0

    def number(self, key: str) -> float:
        """A numeric parameter; anything else names the condition and the key."""
        value = self.params.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise PmcError(f"condition {self.name}: {key} must be a number, not {value!r}")
        return float(value)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form, as ``run.json`` records it."""
        return {
            "schema_version": CONDITION_SCHEMA_VERSION,
            "name": self.name,
            "kind": self.kind.value,
            "params": dict(self.params),
            "seed": self.seed,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Condition:
        """Inverse of :meth:`to_dict`."""
        return cls(
            str(data["name"]), ConditionKind(data["kind"]), dict(data["params"]), int(data["seed"])
        )


def parse_conditions(text: str, seed: int = 0) -> tuple[Condition, ...]:
    """``NAME[:key=value...][,NAME...]`` as conditions; an unknown name or key says so.

    >>> [c.params["snr_db"] for c in parse_conditions("babble-10db:snr_db=0")]
    [0.0]
    """
    out = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, *settings = item.split(":")
        preset = PRESETS.get(name)
        if preset is None:
            raise PmcError(f"unknown condition {name!r} (known: {', '.join(sorted(PRESETS))})")
        kind, defaults = preset
        params = dict(defaults)
        for setting in settings:
            key, sep, value = setting.partition("=")
            if not sep or key not in defaults:
                known = ", ".join(sorted(defaults))
                raise PmcError(
                    f"condition {name}: {setting!r} is not KEY=VALUE with a key of {known}"
                )
            params[key] = _value(value, defaults[key], name, key)
        out.append(Condition(name, kind, params, seed))
    return tuple(out)


def _value(text: str, default: Any, name: str, key: str) -> Any:
    if isinstance(default, str):
        return text
    try:
        return type(default)(text)
    except ValueError:
        raise PmcError(f"condition {name}: {key} must be a number, not {text!r}") from None
