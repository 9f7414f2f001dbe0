"""Where a reply's latency goes: the endpointer, a protocol wait, generation, silence, the word.

Read from what each trace already holds (docs/architecture.md "Latency parts"): the system's own
signals that mark its endpointer's decision and the reply's request
(:meth:`pmc.systems.SystemAdapter.latency_mark`), the first audio message of the reply, and,
from its score, the first audible sample and the first word on the played track. Each part runs
from the mark before it, so the parts of a rollout sum to its measured latency exactly; a mark
the system does not give is absent, and its time falls to the next part.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pmc import io
from pmc.errors import PmcError
from pmc.harness import TRACE_FILE, Run
from pmc.points import Point, PointKind
from pmc.report._aggregate import RESAMPLES
from pmc.report._data import RunData
from pmc.report._resample import draw_counts, resampled_medians
from pmc.scoring import PauseOutcome, Score
from pmc.systems import LatencyMark, adapter_factory
from pmc.table import Table

BURST_GAP_S = 0.1
"""An audio message begins the reply when it comes this long after the audio received before it
has played out: a reply's messages come faster than they play (hosted deltas) or as each starts
playing (local chunks), so only its first one follows a silence; a full-duplex model streams
audio all the time, so it has no first message and that part is absent. 100 ms is five 20 ms
frames: more than a message's scheduling jitter, less than any pause between replies."""

STAMP_SLACK_S = 0.001
"""A message stamped this much after the first audible sample still carried it: scores keep
their times to 0.1 ms, and the played track places audio to the sample."""

PARTS = (
    ("endpointing", "endpointer decided"),
    ("wait", "reply requested"),
    ("generation", "first audio message"),
    ("lead_in", "first audible sample"),
    ("first_word", "first word"),
)
"""Each part by name, and the moment it ends; it starts where the part before it ended."""


@dataclass(frozen=True)
class LatencyParts:
    """One rollout's latency and the moments inside it, seconds after the boundary.

    Attributes:
        point_id: The point.
        conversation_id: Its conversation (the bootstrap resamples conversations).
        kind: A turn end (from the turn end) or a pause taken over (from the pause start).
        latency_s: The first word: the latency scoring measured.
        endpointed_s: The system's signal that its endpointer decided; None where it gives none.
        requested_s: The system's signal that the reply was asked for after a wait.
        first_message_s: The audio message the reply began with; None for a continuous stream.
        first_audible_s: The reply's first sample above the speech gate.
    """

    point_id: str
    conversation_id: str
    kind: PointKind
    latency_s: float
    endpointed_s: float | None
    requested_s: float | None
    first_message_s: float | None
    first_audible_s: float

    def parts(self) -> dict[str, float | None]:
        """Each part's length (None where its mark is absent); the present ones sum to latency."""
        marks = (
            self.endpointed_s,
            self.requested_s,
            self.first_message_s,
            self.first_audible_s,
            self.latency_s,
        )
        out: dict[str, float | None] = {}
        last = 0.0
        for (name, _), at in zip(PARTS, marks, strict=True):
            if at is None:
                out[name] = None
                continue
            out[name] = at - last
            last = at
        return out


def _latency(score: Score) -> float | None:
    """The latency scoring measured, where the reply began after the boundary."""
    if score.kind is PointKind.TURN_END:
        reply = score.reply
        return reply.latency_s if reply is not None and reply.words else None
    pause = score.pause
    if pause is None or pause.outcome is not PauseOutcome.TAKEOVER or pause.under_way:
        return None
    return pause.latency_s


def parts_of(
    score: Score,
    point: Point,
    trace: Mapping[str, Any],
    mark: Callable[[Mapping[str, Any]], LatencyMark | None],
    rate: int,
) -> LatencyParts | None:
    """One rollout's parts; None where it gave no reply that began after the boundary.

    ``rate`` is the system's audio rate (its messages' sample counts are at it).
    """
    latency = _latency(score)
    if latency is None or latency < 0:
        return None
    boundary = point.boundary_stream_s
    t0 = int(trace["t0_ns"])
    outputs = trace.get("outputs", [])

    def after(output: Mapping[str, Any]) -> float:
        return (int(output["arrival_ns"]) - t0) / 1e9 - boundary

    audible = [
        e.start_stream_s - boundary
        for e in score.evidence
        if 0.0 <= e.start_stream_s - boundary <= latency
    ]
    first_audible = min(audible, default=latency)
    first_message = None
    played_until = -np.inf  # where the audio received so far ends, played in order
    for output in outputs:
        if output["kind"] != "audio" or not output.get("samples"):
            continue
        at = after(output)
        if at > first_audible + STAMP_SLACK_S:
            break
        if at >= 0.0 and at > played_until + BURST_GAP_S:
            first_message = at
        played_until = max(played_until, at) + int(output["samples"]) / rate
    until = first_audible if first_message is None else first_message
    endpointed = requested = None
    for output in outputs:
        if output["kind"] != "signal":
            continue
        at = after(output)
        found = mark(output.get("detail", {}))
        if found is LatencyMark.ENDPOINTED and endpointed is None and 0.0 <= at <= until:
            endpointed = at
        elif found is LatencyMark.REQUESTED and requested is None and (endpointed or 0.0) <= at:
            requested = at if at <= until else None
    return LatencyParts(
        point.point_id,
        point.conversation_id,
        point.kind,
        latency,
        endpointed,
        requested,
        first_message,
        first_audible,
    )


def _marks_of(data: RunData, system: str) -> Callable[[Mapping[str, Any]], LatencyMark | None]:
    try:
        return adapter_factory(data.cards[system]).latency_mark
    except PmcError:  # an adapter not installed here: its signals are read as marking nothing
        return lambda _: None


def _traced(
    data: RunData, system: str, kind: PointKind
) -> Iterator[tuple[Score, Point, dict[str, Any]]]:
    """Rollout 0 of each scored point of ``kind``, with its point and trace."""
    run = Run(data.run_dir)
    for score in data.first(system, kind):
        point = data.points.get(score.point_id)
        path = run.rollout_dir(system, score.point_id, 0) / TRACE_FILE
        if point is not None and path.exists():
            yield score, point, io.read_json(path)


def latency_parts(data: RunData, system: str, kind: PointKind) -> list[LatencyParts]:
    """Rollout 0 of each point of ``kind`` that the system replied at, split into its parts."""
    mark, rate = _marks_of(data, system), data.cards[system].sample_rate
    found = (
        parts_of(score, point, trace, mark, rate)
        for score, point, trace in _traced(data, system, kind)
    )
    return [p for p in found if p is not None]


def decisions(data: RunData, system: str, kind: PointKind) -> list[float]:
    """The system's first endpointer decision after the boundary, at each point of ``kind``.

    Rollout 0 of every point, whatever it then said (a point without a decision in its trace
    is left out): the decision latency the trade-off curves put a run's systems at.
    """
    mark = _marks_of(data, system)
    out = []
    for _, point, trace in _traced(data, system, kind):
        t0 = int(trace["t0_ns"])
        later = [
            at
            for o in trace.get("outputs", [])
            if o["kind"] == "signal" and mark(o.get("detail", {})) is LatencyMark.ENDPOINTED
            if (at := (int(o["arrival_ns"]) - t0) / 1e9 - point.boundary_stream_s) >= 0.0
        ]
        if later:
            out.append(min(later))
    return out


def median_interval(
    values: Sequence[tuple[str, float]], seed: int, resamples: int
) -> tuple[float | None, float | None, float | None]:
    """The median of ``(conversation, value)`` pairs and its 95% interval over conversations."""
    if not values:
        return None, None, None
    groups: dict[str, list[float]] = {}
    for conversation, value in values:
        groups.setdefault(conversation, []).append(value)
    names = sorted(groups)
    counts = draw_counts(np.random.default_rng(seed), len(names), resamples)
    where = [i for i, name in enumerate(names) for _ in groups[name]]
    draws = resampled_medians([v for name in names for v in groups[name]], where, counts)
    median = float(np.median([v for _, v in values]))
    if not draws:
        return median, None, None
    low, high = np.percentile(draws, [2.5, 97.5])
    return median, float(low), float(high)


def _cell(found: tuple[float | None, float | None, float | None], n: int, total: int) -> str:
    median, low, high = found
    if median is None:
        return "-"
    text = f"{median:.2f}"
    if low is not None and high is not None:
        text += f" [{low:.2f}, {high:.2f}]"
    return text if n == total else f"{text} (n={n})"


KINDS = (PointKind.TURN_END, PointKind.PAUSE)


def latency_table(data: RunData, seed: int = 0, resamples: int = RESAMPLES) -> Table:
    """Per system and kind: the median latency and the median of each part, with intervals."""
    rows: list[tuple[str | int, ...]] = []
    for system in data.systems:
        if data.references[system] is not None:
            continue
        for kind in KINDS:
            found = latency_parts(data, system, kind)
            if not found:
                continue
            total = len(found)
            cells: list[str] = [
                _cell(
                    median_interval(
                        [(p.conversation_id, p.latency_s) for p in found], seed, resamples
                    ),
                    total,
                    total,
                )
            ]
            for name, _ in PARTS:
                values = [
                    (p.conversation_id, v) for p in found if (v := p.parts()[name]) is not None
                ]
                cells.append(_cell(median_interval(values, seed, resamples), len(values), total))
            label = "turn end" if kind is PointKind.TURN_END else "pause taken over"
            rows.append((system, label, total, *cells))
    return Table(
        "latency_parts",
        "Where the latency goes: median of each part, seconds",
        (
            "system",
            "point kind",
            "replies",
            "latency (first word)",
            *(f"{name.replace('_', ' ')}: to {end}" for name, end in PARTS),
        ),
        tuple(rows),
        "Rollout 0 of each turn end with a worded reply, and each pause the system took over "
        "(from the pause start); replies under way at the boundary are left out. Each part runs "
        "from the moment before it to the one it names: the system's own signal that its "
        "endpointer decided (its VAD's speech stopped or the commit it acknowledged, Smart Turn's "
        "verdict, the cascade's silence window, LiveKit's turn to thinking), its signal that the "
        "reply was asked for after a protocol wait (Grok's settle after commit), the audio "
        "message the reply began with, its first audible sample and its first word on the played "
        "track. A moment the system does not give is absent and its time falls to the next "
        "part, so each rollout's parts sum to its latency; medians of parts need not. (n=...) "
        f"counts the replies a part is present in. Intervals: {resamples} resamples of "
        "conversations.",
    )
