"""A run folder as a type: its record (``run.json``) and its rollouts.

``runs/<run_id>/`` is the contract between the harness, which writes it, and scoring,
calibration, the report and the command line, which read it (docs/architecture.md "The run
folder"). Only this module opens ``run.json`` or lists ``rollouts/``.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from pmc import io
from pmc.conditions import Condition
from pmc.errors import PmcError
from pmc.harness._clock_kind import ClockKind
from pmc.harness._history import HistorySource
from pmc.harness._protocol import ProtocolParams
from pmc.harness._tally import OBSERVED, Observed
from pmc.systems import SystemCard

RUNS_DIR = "runs"
RUN_FILE = "run.json"
ROLLOUTS_DIR = "rollouts"
SCORES_DIR = "scores"
REPORT_DIR = "report"
ERROR_FILE = "error.json"
TRACE_FILE = "trace.json"
OBSERVED_LOG = "observed.jsonl"
FOLDED = "observed_folded"
"""The key of ``run.json`` naming the invocations whose observation log is already folded."""
RUN_SCHEMA_VERSION = 1


class RolloutState(StrEnum):
    """Where one rollout stands, from the files in its folder."""

    DONE = "done"
    """Its ``trace.json`` is written (always last, atomically)."""
    FAILED = "failed"
    """Its transport failed on every attempt: ``error.json`` says why; a rerun tries again."""
    PENDING = "pending"
    """Neither: not run yet, or under way."""


FINISHED = (RolloutState.DONE, RolloutState.FAILED)
"""The states a rollout can be scored or shown in."""


@dataclass(frozen=True)
class SystemEntry:
    """One system of a run: its card, adapter version and clock, as the run first recorded them."""

    card: SystemCard
    adapter_version: str
    clock: ClockKind

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "card": self.card.to_dict(),
            "adapter_version": self.adapter_version,
            "clock": self.clock.value,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SystemEntry:
        """Inverse of :meth:`to_dict`."""
        return cls(
            SystemCard.from_dict(dict(data["card"])),
            str(data["adapter_version"]),
            ClockKind(data["clock"]),
        )


@dataclass(frozen=True)
class RunRecord:
    """What a run's results depend on (``run.json``), and what its servers did besides answering.

    Attributes:
        run_id: The run's folder under ``runs/``.
        pmc_version: The version that started the run.
        points_manifest_sha256: The digest of the points it runs on.
        seed: The run's seed.
        rollouts: Rollouts per point and system (the most any invocation asked for).
        protocol: The protocol's numbers.
        systems: Each system by card name.
        observed: Each system's observations, summed over invocations (only where there were).
        history: The history every system got (the context ablation; ``full`` before it existed).
        conditions: What every system heard the person through (docs/conditions.md); none
            before they existed.
        folded: The invocations whose lines of the observation log are already in
            ``observed``; only while that log may still hold them (``_observations``).
    """

    run_id: str
    pmc_version: str
    points_manifest_sha256: str
    seed: int
    rollouts: int
    protocol: ProtocolParams
    systems: Mapping[str, SystemEntry]
    observed: Mapping[str, Observed] = field(default_factory=dict)
    history: HistorySource = HistorySource.FULL
    conditions: tuple[Condition, ...] = ()
    folded: tuple[str, ...] = ()
    schema_version: int = RUN_SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form; ``observed``, ``conditions`` and ``folded`` only when not empty."""
        data: dict[str, Any] = {
            "schema_version": self.schema_version,
            "run_id": self.run_id,
            "pmc_version": self.pmc_version,
            "points_manifest_sha256": self.points_manifest_sha256,
            "seed": self.seed,
            "rollouts": self.rollouts,
            "protocol": self.protocol.to_dict(),
            "history": self.history.value,
            "systems": {name: entry.to_dict() for name, entry in self.systems.items()},
        }
        if self.conditions:
            data["conditions"] = [c.to_dict() for c in self.conditions]
        if self.observed:
            data[OBSERVED] = {name: obs.to_dict() for name, obs in self.observed.items()}
        if self.folded:
            data[FOLDED] = list(self.folded)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunRecord:
        """Inverse of :meth:`to_dict`."""
        version = io.schema_version(dict(data), RUN_SCHEMA_VERSION, "run record")
        return cls(
            run_id=str(data["run_id"]),
            pmc_version=str(data["pmc_version"]),
            points_manifest_sha256=str(data["points_manifest_sha256"]),
            seed=int(data["seed"]),
            rollouts=int(data["rollouts"]),
            protocol=ProtocolParams.from_dict(data["protocol"]),
            systems={n: SystemEntry.from_dict(e) for n, e in data.get("systems", {}).items()},
            observed={n: Observed.from_dict(o) for n, o in data.get(OBSERVED, {}).items()},
            history=HistorySource(data.get("history", HistorySource.FULL.value)),
            conditions=tuple(Condition.from_dict(c) for c in data.get("conditions", [])),
            folded=tuple(str(i) for i in data.get(FOLDED, [])),
            schema_version=version,
        )

    def joined(self, new: RunRecord, path: Path) -> RunRecord:
        """This record with another invocation's systems added; refused where they disagree.

        The points, seed, protocol, history and conditions must be this run's, and a system
        already in it must be the same (card, adapter version and clock). What was observed is
        kept.
        """
        for key in ("points_manifest_sha256", "seed", "protocol", "history", "conditions"):
            if getattr(self, key) != getattr(new, key):
                raise PmcError(
                    f"{path}: this run was made with another {key.replace('_', ' ')}; "
                    "resume it with the same settings or start a new --run-id"
                )
        systems = dict(self.systems)
        for name, entry in new.systems.items():
            if name in systems and systems[name].to_dict() != entry.to_dict():
                raise PmcError(
                    f"{path}: system {name} has changed since this run started (card, adapter "
                    "version or clock); start a new --run-id"
                )
            systems[name] = entry
        return replace(self, systems=systems, rollouts=max(self.rollouts, new.rollouts))

    def with_observed(self, new: Mapping[str, Observed], folded: Collection[str] = ()) -> RunRecord:
        """This record with observations added to earlier ones; ``folded``: their invocations."""
        merged = dict(self.observed)
        for name, obs in new.items():
            merged[name] = merged[name].plus(obs) if name in merged else obs
        return replace(self, observed=merged, folded=tuple(sorted(folded)))


@dataclass(frozen=True)
class RolloutEntry:
    """One rollout folder of a run (``rollouts/<system>/<point_id>/<rollout>/``)."""

    system: str
    point_id: str
    rollout: int
    folder: Path
    state: RolloutState


@dataclass(frozen=True)
class Run:
    """A run folder (``WORKDIR/runs/<run_id>/``): its record, rollouts, scores and report."""

    folder: Path

    @property
    def run_id(self) -> str:
        """The run's id: its folder's name."""
        return self.folder.name

    @property
    def workdir(self) -> Path:
        """The working directory the run belongs to (its points come from there)."""
        return self.folder.resolve().parent.parent

    @property
    def record_path(self) -> Path:
        """Where the record is (``run.json``)."""
        return self.folder / RUN_FILE

    @property
    def observation_log(self) -> Path:
        """Where invocations log what they observe as it happens, until it is in the record."""
        return self.folder / OBSERVED_LOG

    @property
    def rollouts_dir(self) -> Path:
        """Where the rollouts are, one folder per system, point and rollout index."""
        return self.folder / ROLLOUTS_DIR

    @property
    def scores_dir(self) -> Path:
        """Where scoring writes each rollout's score and each system's ``<system>.jsonl``."""
        return self.folder / SCORES_DIR

    @property
    def report_dir(self) -> Path:
        """Where the report goes by default."""
        return self.folder / REPORT_DIR

    def exists(self) -> bool:
        """Whether a record is here."""
        return self.record_path.exists()

    @functools.cached_property
    def record(self) -> RunRecord:
        """The run's record, read once."""
        if not self.exists():
            raise PmcError(
                f"{self.record_path}: not a run folder (no run.json); run `pmc run` first"
            )
        return read_run_record(self.record_path)

    def rollout_dir(self, system: str, point_id: str, rollout: int) -> Path:
        """The folder of one rollout."""
        return self.rollouts_dir / system / point_id / str(rollout)

    def systems_with_rollouts(self) -> list[str]:
        """The systems that have a rollout folder, sorted (the record may list more)."""
        root = self.rollouts_dir
        return sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []

    def remove_temporaries(self) -> int:
        """Delete what a killed run left half-written (rollouts, ``run.json``); how many."""
        found = io.remove_temporaries(self.rollouts_dir)
        return found + io.remove_temporaries(self.folder, recursive=False)

    def rollouts(
        self, systems: Iterable[str] | None = None, states: Collection[RolloutState] = FINISHED
    ) -> Iterator[RolloutEntry]:
        """The rollouts of ``systems`` (all that have one) in ``states``, in order.

        By system, then point id, then rollout index; a folder whose name is not a rollout
        index (a temporary, a stray) is not a rollout.
        """
        for system in self.systems_with_rollouts() if systems is None else systems:
            base = self.rollouts_dir / system
            if not base.is_dir():
                continue
            for point_dir in sorted(p for p in base.iterdir() if p.is_dir()):
                ks = sorted(
                    int(d.name) for d in point_dir.iterdir() if d.is_dir() and d.name.isdigit()
                )
                for k in ks:
                    folder = point_dir / str(k)
                    state = _state(folder)
                    if state in states:
                        yield RolloutEntry(system, point_dir.name, k, folder, state)


def _state(folder: Path) -> RolloutState:
    if (folder / TRACE_FILE).exists():
        return RolloutState.DONE
    if (folder / ERROR_FILE).exists():
        return RolloutState.FAILED
    return RolloutState.PENDING


def read_run_record(path: Path) -> RunRecord:
    """The record in ``path``; a malformed one is refused with the file and the problem."""
    data = io.read_json(path)
    try:
        return RunRecord.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise PmcError(f"{path}: not a run record ({type(exc).__name__}: {exc})") from None


def write_run_record(path: Path, record: RunRecord) -> None:
    """Write ``record`` to ``path`` atomically."""
    io.write_json(path, record.to_dict())
