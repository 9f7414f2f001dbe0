"""What leads the report: every system against the person on the paper's five questions.

Does the system hold at the person's pauses, answer at turn ends as soon and as briefly as the
person, with words like the person's, and remember what was said? Each question is answered
by one of the paper's own measures (Table 3), read from the main table's rows, so the summary
can never disagree with the tables under it:

- holds at pauses: the hold rate, the share of pauses not taken over (1 - the takeover share);
- answers as soon: the median turn-end latency to the first word;
- answers as briefly: the median duration ratio to the person's reply;
- with similar words: the median cosine to the person's reply;
- remembers: conversation-recall accuracy after 120 s of history, under the run's first LLM
  judge (the strict matcher where no judge ran).

The person's own values stand beside them: every pause held (the points are chosen so), the
labelled offset of the person's replies (their median), a length ratio and a similarity of 1 by
definition (paper section 4.3), and every recall answer right (the gold answer is what was
said). Reference rows (never speak, always speak, the person and the shuffled person as the
pipeline measures them) are kept, marked as references.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from pmc.points import PointKind
from pmc.report._aggregate import Value, cell
from pmc.report._data import RunData
from pmc.report._main import MainRow
from pmc.report._recall import STRICT, judges
from pmc.systems import ReferenceRow
from pmc.table import Cell, Table, show

SUMMARY_KEY = "summary"
"""The summary's anchor, figure stem and key in ``results.json``."""
HOLD = "takeover"
"""The main table's metric the hold rate is the complement of."""


@dataclass(frozen=True)
class Question:
    """One of the paper's questions and the measure that answers it.

    Attributes:
        key: Its key in ``results.json``.
        question: The question, as a panel's title.
        measure: The measure and its unit, as an axis label and a column header.
        kind: The point kind it is asked at.
        metric: The main table's metric it is read from.
        rate: Whether it is a share (drawn on a 0 to 1 axis).
    """

    key: str
    question: str
    measure: str
    kind: PointKind
    metric: str
    rate: bool

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "key": self.key,
            "question": self.question,
            "measure": self.measure,
            "kind": self.kind.value,
            "metric": self.metric,
        }


QUESTIONS = (
    Question("hold", "holds at pauses", "hold rate", PointKind.PAUSE, HOLD, True),
    Question(
        "latency", "answers as soon", "median latency (s)", PointKind.TURN_END, "latency_s", False
    ),
    Question(
        "length",
        "answers as briefly",
        "median duration ratio",
        PointKind.TURN_END,
        "duration_ratio",
        False,
    ),
    Question(
        "similarity", "with similar words", "median cosine", PointKind.TURN_END, "cosine", False
    ),
    Question("recall", "remembers", "recall accuracy", PointKind.CONVERSATION_RECALL, STRICT, True),
)
"""The paper's questions in its order; recall's metric is replaced by the run's judge."""


@dataclass(frozen=True)
class SummaryRow:
    """One system's answers.

    Attributes:
        system: The system card's name.
        reference: The reference row it is, if it is one.
        values: Each question's value by key (absent: not run at that kind).
    """

    system: str
    reference: ReferenceRow | None
    values: dict[str, Value]

    @property
    def label(self) -> str:
        """The system's name, marked where it is a reference row."""
        return self.system if self.reference is None else f"{self.system} (reference)"


@dataclass(frozen=True)
class Summary:
    """The summary: the questions the run can answer, the person, and every system.

    Attributes:
        questions: The questions with points in the run, in the paper's order.
        person: The person's value on each question (None: no labelled reply to time).
        rows: The systems in the report's order, under test first.
    """

    questions: tuple[Question, ...]
    person: dict[str, float | None]
    rows: tuple[SummaryRow, ...]

    def table(self) -> Table:
        """A row for the person, then one per system: estimate and 95% interval per question."""
        columns = ("system", *(f"{q.question}: {q.measure}" for q in self.questions))
        person: tuple[Cell, ...] = (
            "the person",
            *(show(self.person[q.key]) for q in self.questions),
        )
        body = [person]
        for r in self.rows:
            body.append((r.label, *(cell(r.values.get(q.key)) for q in self.questions)))
        return Table(
            SUMMARY_KEY,
            "Summary: each system against the person",
            columns,
            tuple(body),
            "Estimate [95% bootstrap interval over conversations], from the main tables below; "
            "hold rate = 1 - takeover share. The person held every pause, replied at the "
            "labelled offset (median), matches itself in length and words (1 by definition), "
            "and knows what was said. Reference rows are bounds to read the systems against, "
            "not competitors.",
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "questions": [q.to_dict() for q in self.questions],
            "person": {k: _round(v) for k, v in self.person.items()},
            "rows": [
                {
                    "system": r.system,
                    "reference": None if r.reference is None else r.reference.value,
                    "values": {k: v.to_dict() for k, v in r.values.items()},
                }
                for r in self.rows
            ],
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def held(takeover: Value) -> Value:
    """The hold rate from the takeover share: its complement, the interval turned round."""
    if takeover.estimate is None:
        return Value(None, takeover.n)
    low = None if takeover.ci_high is None else 1.0 - takeover.ci_high
    high = None if takeover.ci_low is None else 1.0 - takeover.ci_low
    return Value(1.0 - takeover.estimate, takeover.n, ci_low=low, ci_high=high)


def _person(data: RunData, question: Question) -> float | None:
    """The person's value: the median labelled reply offset for latency, else 1."""
    if question.metric != "latency_s":
        return 1.0
    ids = {s.point_id for system in data.systems for s in data.first(system, question.kind)}
    offsets = [
        p.reply_start_conv_s - p.boundary_conv_s
        for p in (data.points.get(pid) for pid in sorted(ids))
        if p is not None and p.reply_start_conv_s is not None
    ]
    return float(np.median(offsets)) if offsets else None


def summary_of(data: RunData, rows: Sequence[MainRow]) -> Summary | None:
    """The summary of a run from its main table's rows; None where it answers no question."""
    found = judges(data)
    recall_metric = f"judge:{found[0]}" if found else STRICT
    present = {r.kind for r in rows}
    questions = []
    for q in QUESTIONS:
        if q.kind not in present:
            continue
        if q.kind is PointKind.CONVERSATION_RECALL:
            scorer = found[0] if found else "strict matcher"
            q = replace(q, measure=f"{q.measure} ({scorer})", metric=recall_metric)
        questions.append(q)
    out = []
    for system in data.systems:
        mine = {r.kind: r for r in rows if r.system == system}
        if not mine:
            continue
        values: dict[str, Value] = {}
        for q in questions:
            row = mine.get(q.kind)
            if row is None or q.metric not in row.values:
                continue
            value = row.values[q.metric]
            values[q.key] = held(value) if q.metric == HOLD else value
        out.append(SummaryRow(system, data.references[system], values))
    if not questions or not out:
        return None
    return Summary(tuple(questions), {q.key: _person(data, q) for q in questions}, tuple(out))
