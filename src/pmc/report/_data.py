"""A scored run, read once: its cards, points and scores, for every table and figure."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pmc.conditions import Condition
from pmc.errors import PmcError
from pmc.harness import HistorySource, Run, SystemEntry
from pmc.points import Point, PointKind, read_points
from pmc.report._aggregate import scored
from pmc.scoring import Score, read_scores
from pmc.systems import ReferenceRow, SystemCard, reference_row_of


@dataclass(frozen=True)
class RunData:
    """What the report reads of one run.

    Attributes:
        run_dir: The run's folder.
        run_id: Its id.
        systems: Systems under test first, then the reference systems, each group by name.
        cards: Each system's card as the run recorded it.
        references: Each system's reference role (None: under test).
        points: The working directory's points by id.
        scores: Each system's scores (empty where the system is not scored yet).
        unscored: Systems without scores.
        entries: Each system's entry in the run's record (card, adapter version, clock); empty
            for data not read from a run.
        history: The history its systems got (the context ablation).
        conditions: What its systems heard the person through (docs/conditions.md); none for
            a clean run.
    """

    run_dir: Path
    run_id: str
    systems: tuple[str, ...]
    cards: dict[str, SystemCard]
    references: dict[str, ReferenceRow | None]
    points: dict[str, Point]
    scores: dict[str, list[Score]]
    unscored: tuple[str, ...] = ()
    entries: dict[str, SystemEntry] = field(default_factory=dict)
    history: HistorySource = HistorySource.FULL
    conditions: tuple[Condition, ...] = ()

    def first(self, system: str, kind: PointKind) -> list[Score]:
        """Rollout 0 of every point of ``kind``, transport failures left out (paper 3.4)."""
        return scored([s for s in self.scores[system] if s.kind is kind])

    def kinds(self, system: str) -> list[PointKind]:
        """The point kinds a system was scored on, in the paper's order."""
        present = {s.kind for s in self.scores[system]}
        return [k for k in PointKind if k in present]

    def label(self, system: str) -> str:
        """The system's name, with its reference role where it has one."""
        role = self.references[system]
        return system if role is None else f"{system} (reference: {role.value})"


def load_run(run_dir: Path) -> RunData:
    """Read a run's record, its working directory's points and every system's scores."""
    run = Run(run_dir)
    record = run.record
    cards = {name: entry.card for name, entry in record.systems.items()}
    references = {name: reference_row_of(card) for name, card in cards.items()}
    order = sorted(cards, key=lambda n: (references[n] is not None, _rank(references[n]), n))
    scores: dict[str, list[Score]] = {}
    unscored = []
    for name in order:
        try:
            scores[name] = read_scores(run_dir, name)
        except PmcError:
            scores[name] = []
            unscored.append(name)
    points = {p.point_id: p for p in read_points(run.workdir)}
    return RunData(
        run_dir,
        record.run_id,
        tuple(order),
        cards,
        references,
        points,
        scores,
        tuple(unscored),
        dict(record.systems),
        record.history,
        record.conditions,
    )


def _rank(role: ReferenceRow | None) -> int:
    return 0 if role is None else list(ReferenceRow).index(role)
