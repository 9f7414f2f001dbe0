"""A run's rollouts as the HTML report's pages need them.

Each rollout is read once into a :class:`RolloutView`: its point, its score, and a slim trace
(the per-frame input timing dropped, which would fill memory for nothing). What a page plays
is made by :mod:`pmc.report._listen`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pmc import io
from pmc.harness import ERROR_FILE, TRACE_FILE, ProtocolRecord, Run
from pmc.points import Point, PointKind
from pmc.scoring import Score


@dataclass(frozen=True)
class TraceSummary:
    """What pages need of a ``trace.json``; its per-frame input timing is left out.

    Attributes:
        protocol: What the protocol did (None where the trace recorded none).
        audit: The timing audit as recorded.
        texts: Text and errors the system sent: stream time, kind, text.
    """

    protocol: ProtocolRecord | None
    audit: dict[str, Any]
    texts: tuple[tuple[float, str, str], ...]


@dataclass(frozen=True)
class RolloutView:
    """What a page shows of one rollout, read once (the trace without its per-frame timing)."""

    system: str
    point_id: str
    k: int
    folder: Path
    kind: PointKind | None
    point: Point | None
    trace: TraceSummary | None
    error: dict[str, Any] | None
    score: Score | None

    @property
    def page(self) -> str:
        """The page, relative to the report folder."""
        return f"rollouts/{self.system}/{self.point_id}-{self.k}.html"


def read_rollouts(
    run: Run, system: str, points: dict[str, Point], scores: dict[tuple[str, int], Score]
) -> Iterable[RolloutView]:
    """A system's rollouts that ran or failed, by point and rollout; those under way are not."""
    for entry in run.rollouts([system]):
        trace = _slim_trace(entry.folder / TRACE_FILE)
        error = None if trace is not None else io.read_json(entry.folder / ERROR_FILE)
        point = points.get(entry.point_id)
        score = scores.get((entry.point_id, entry.rollout))
        kind = point.kind if point else score.kind if score else None
        if kind is None and trace and trace.protocol:
            kind = trace.protocol.kind
        yield RolloutView(
            system, entry.point_id, entry.rollout, entry.folder, kind, point, trace, error, score
        )


def _slim_trace(path: Path) -> TraceSummary | None:
    """What pages need of a trace; its per-frame input timing would fill memory for nothing."""
    if not path.exists():
        return None
    data = io.read_json(path)
    t0 = int(data["t0_ns"])
    texts = tuple(
        ((int(o["arrival_ns"]) - t0) / 1e9, str(o["kind"]), str(o["text"]))
        for o in data.get("outputs", [])
        if o.get("text") and o["kind"] in ("text", "error")
    )
    return TraceSummary(ProtocolRecord.of_trace(data), data.get("audit", {}), texts)
