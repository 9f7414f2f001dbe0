"""A checks file: bounds a run's numbers must keep, and regressions against a baseline run.

The file is TOML (docs/architecture.md "Checks in CI")::

    baseline = "runs/last-release"       # optional; relative to this file

    [[bound]]
    system = "*"                         # every system under test, or one card's name
    kind = "turn_end"                    # a point kind; left out: every kind
    metric = "latency_s"                 # a main-table metric, or hold, failed, no_audio
    at_most = 1.0                        # and/or at_least

    [[regression]]
    system = "*"
    measure = "latency_s"                # hold, latency_s, duration_ratio, cosine, ...
    margin = 0.1                         # a change smaller than this is never flagged
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from pmc import io
from pmc.errors import InputError
from pmc.points import PointKind
from pmc.report import MEASURES, metrics_for

CHECKS_SCHEMA_VERSION = 1
EVERY_SYSTEM = "*"
"""A check's ``system`` that means every system under test (references are never checked)."""


class Derived(StrEnum):
    """Bound metrics that are not a main-table value of their own."""

    HOLD = "hold"
    """1 - takeover at pauses: the share of pauses the system left to the person."""
    FAILED = "failed"
    """Points whose rollout 0 failed (a transport error), a count."""
    NO_AUDIO = "no_audio"
    """Points where the system sent no audio, a count."""


class Worse(StrEnum):
    """Which way a measure gets worse, for a regression."""

    LOWER = "lower"
    HIGHER = "higher"
    EITHER = "either"
    """Away from the baseline either way (the duration ratio: the person's is the target)."""


WORSE = {
    "hold": Worse.LOWER,
    "latency_s": Worse.HIGHER,
    "duration_ratio": Worse.EITHER,
    "cosine": Worse.LOWER,
    "fact_recall": Worse.LOWER,
    "conversation_recall": Worse.LOWER,
}
"""Each regression measure (``pmc.report.MEASURES``) and the way it gets worse."""


def bound_metrics() -> list[str]:
    """Every metric a bound may name: the main table's, of any kind, and the derived ones."""
    names = {name for kind in PointKind for name in metrics_for(kind)}
    return sorted(names | {d.value for d in Derived})


@dataclass(frozen=True)
class Bound:
    """A limit on one number of the run: ``at_least <= value <= at_most``.

    Attributes:
        index: The bound's place in the file (1-based), to name it in messages.
        system: A card's name, or ``*``.
        kind: The point kind, or None for every kind the system was scored on.
        metric: A main-table metric or a :class:`Derived` one.
        at_least: The lowest value that passes, if any.
        at_most: The highest value that passes, if any.
    """

    index: int
    system: str
    kind: PointKind | None
    metric: str
    at_least: float | None = None
    at_most: float | None = None

    @property
    def name(self) -> str:
        """The bound as a reader says it: ``latency_s <= 1``."""
        parts = []
        if self.at_least is not None:
            parts.append(f"{self.metric} >= {self.at_least:g}")
        if self.at_most is not None:
            parts.append(f"{self.metric} <= {self.at_most:g}")
        return " and ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "system": self.system,
            "kind": None if self.kind is None else self.kind.value,
            "metric": self.metric,
            "at_least": self.at_least,
            "at_most": self.at_most,
        }


@dataclass(frozen=True)
class Regression:
    """No worsening of a measure against the baseline beyond ``margin``, paired over points.

    Attributes:
        index: Its place in the file (1-based).
        system: A card's name, or ``*``.
        measure: One of :data:`WORSE`'s measures.
        margin: The smallest change (in the measure's unit) that can fail.
    """

    index: int
    system: str
    measure: str
    margin: float

    @property
    def worse(self) -> Worse:
        """The way this measure gets worse."""
        return WORSE[self.measure]

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {"system": self.system, "measure": self.measure, "margin": self.margin}


@dataclass(frozen=True)
class Checks:
    """Everything a checks file asks.

    Attributes:
        path: The file.
        bounds: Its bounds, in order.
        regressions: Its regressions, in order.
        baseline: The baseline run its regressions compare with, if it names one.
    """

    path: Path
    bounds: tuple[Bound, ...]
    regressions: tuple[Regression, ...]
    baseline: Path | None = None
    schema_version: int = CHECKS_SCHEMA_VERSION


_TOP = {"schema_version", "baseline", "bound", "regression"}
_BOUND = {"system", "kind", "metric", "at_least", "at_most"}
_REGRESSION = {"system", "measure", "margin"}


def read_checks(path: Path) -> Checks:
    """Read and check a checks file; any problem names the file and the entry."""
    data = io.read_toml(path)
    _known(path, data, _TOP, None)
    version = data.get("schema_version", CHECKS_SCHEMA_VERSION)
    if version != CHECKS_SCHEMA_VERSION:
        raise InputError(path, f"schema_version {version} is not supported (this pmc reads 1)")
    baseline = data.get("baseline")
    if baseline is not None and not isinstance(baseline, str):
        raise InputError(path, "must be a path (a string)", "baseline")
    bounds = tuple(_bound(path, i, e) for i, e in enumerate(_entries(path, data, "bound"), 1))
    regressions = tuple(
        _regression(path, i, e) for i, e in enumerate(_entries(path, data, "regression"), 1)
    )
    if not bounds and not regressions:
        raise InputError(path, "no [[bound]] or [[regression]]: nothing to check")
    return Checks(
        path,
        bounds,
        regressions,
        None if baseline is None else (path.parent / baseline),
    )


def _entries(path: Path, data: dict[str, Any], key: str) -> list[dict[str, Any]]:
    entries = data.get(key, [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise InputError(path, f"must be an array of tables ([[{key}]])", key)
    return entries


def _known(path: Path, entry: dict[str, Any], keys: set[str], where: str | None) -> None:
    unknown = sorted(set(entry) - keys)
    if unknown:
        raise InputError(path, f"unknown key(s): {', '.join(unknown)}", where)


def _system(path: Path, entry: dict[str, Any], where: str) -> str:
    system = entry.get("system", EVERY_SYSTEM)
    if not isinstance(system, str) or not system:
        raise InputError(path, "system must be a card's name or '*'", where)
    return system


def _number(path: Path, entry: dict[str, Any], key: str, where: str) -> float | None:
    value = entry.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(path, f"{key} must be a number", where)
    return float(value)


def _bound(path: Path, index: int, entry: dict[str, Any]) -> Bound:
    where = f"bound {index}"
    _known(path, entry, _BOUND, where)
    kind = entry.get("kind")
    try:
        point_kind = None if kind is None else PointKind(kind)
    except ValueError:
        kinds = ", ".join(k.value for k in PointKind)
        raise InputError(path, f"kind {kind!r} is not one of {kinds}", where) from None
    metric = entry.get("metric")
    if metric not in bound_metrics():
        known = ", ".join(bound_metrics())
        raise InputError(path, f"metric {metric!r} is not one of {known}", where)
    if metric == Derived.HOLD and point_kind not in (None, PointKind.PAUSE):
        raise InputError(path, "hold is a rate at pauses (kind = 'pause')", where)
    low, high = _number(path, entry, "at_least", where), _number(path, entry, "at_most", where)
    if low is None and high is None:
        raise InputError(path, "a bound needs at_least, at_most or both", where)
    if low is not None and high is not None and low > high:
        raise InputError(path, f"at_least {low:g} is above at_most {high:g}", where)
    kind_of_hold = PointKind.PAUSE if metric == Derived.HOLD else point_kind
    return Bound(index, _system(path, entry, where), kind_of_hold, str(metric), low, high)


def _regression(path: Path, index: int, entry: dict[str, Any]) -> Regression:
    where = f"regression {index}"
    _known(path, entry, _REGRESSION, where)
    measure = entry.get("measure")
    known = [m.key for m in MEASURES]
    if measure not in known:
        raise InputError(path, f"measure {measure!r} is not one of {', '.join(known)}", where)
    margin = _number(path, entry, "margin", where)
    if margin is None or margin < 0:
        raise InputError(path, "margin is required and must be 0 or more", where)
    return Regression(index, _system(path, entry, where), str(measure), margin)
