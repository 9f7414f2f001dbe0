"""Recall analyses: accuracy by history length and agreement between scorers.

Paper Table 9 and Figure 4; Table 12 (the strict matcher against the LLM judges).
"""

from __future__ import annotations

from collections.abc import Sequence

from pmc.points import PointKind
from pmc.report._data import RunData
from pmc.scoring import Score
from pmc.table import Cell, Table

RECALL_KINDS = (PointKind.CONVERSATION_RECALL, PointKind.FACT_RECALL)
STRICT = "strict"
"""The scorer that needs no model."""


def verdict(score: Score, scorer: str) -> bool | None:
    """A rollout's verdict under a scorer (``strict`` or a judge's model).

    No answer is wrong; a judge that gave no verdict on it leaves it out (None).
    """
    if score.recall is None:
        return False
    if scorer == STRICT:
        return score.recall.strict.correct
    found = [j.correct for j in score.recall.judges if j.model == scorer]
    return found[0] if found else None


def judges(data: RunData) -> list[str]:
    """Every judge model with a verdict in the run."""
    return sorted(
        {
            j.model
            for scores in data.scores.values()
            for s in scores
            if s.recall
            for j in s.recall.judges
        }
    )


def accuracy(scores: Sequence[Score], scorer: str) -> tuple[float | None, int]:
    """Share correct, over the rollouts the scorer judged."""
    flags = [v for v in (verdict(s, scorer) for s in scores) if v is not None]
    return (sum(flags) / len(flags) if flags else None), len(flags)


def prefixes(data: RunData) -> list[float]:
    """The history lengths of the run's recall points."""
    return sorted({p.prefix_s for p in data.points.values() if p.prefix_s is not None})


def by_history(
    data: RunData, kind: PointKind, scorer: str
) -> dict[str, list[tuple[float | None, int]]]:
    """Per system, accuracy and count at each history length."""
    out = {}
    for system in data.systems:
        scores = data.first(system, kind)
        if not scores:
            continue
        out[system] = [
            accuracy([s for s in scores if data.points[s.point_id].prefix_s == prefix], scorer)
            for prefix in prefixes(data)
        ]
    return out


def history_table(data: RunData) -> Table:
    """Table 9: every system, recall kind and scorer, by history length."""
    rows: list[tuple[Cell, ...]] = []
    for kind in RECALL_KINDS:
        for scorer in (STRICT, *judges(data)):
            for system, cells in by_history(data, kind, scorer).items():
                rows.append(
                    (
                        data.label(system),
                        kind.value.replace("_", " "),
                        scorer,
                        *(_cell(c) for c in cells),
                    )
                )
    return Table(
        "recall_by_history",
        "Recall accuracy by history length (paper Table 9, Figure 4)",
        ("system", "kind", "scorer", *(f"{p:g} s" for p in prefixes(data))),
        tuple(rows),
        "Share correct (rollouts judged). Fact recall is the control: its answer does not "
        "depend on the history.",
    )


def _cell(cell: tuple[float | None, int]) -> str:
    rate, n = cell
    return f"- ({n})" if rate is None else f"{rate:.2f} ({n})"


def agreement_table(data: RunData) -> Table:
    """Table 12: each scorer's accuracy over the same rollouts, and their agreement.

    Pooled over history lengths (paper section 4.4); agreement is the first judge's with the
    strict matcher.
    """
    models = judges(data)
    first = models[0] if models else None
    rows: list[tuple[Cell, ...]] = []
    for system in data.systems:
        for kind in RECALL_KINDS:
            scores = data.first(system, kind)
            if not scores:
                continue
            strict = [bool(verdict(s, STRICT)) for s in scores]
            cells: list[Cell] = [data.label(system), kind.value.replace("_", " "), len(scores)]
            cells += [accuracy(scores, m)[0] for m in models]
            cells.append(sum(strict) / len(strict))
            if first is None:
                cells += [None, None, None]
            else:
                pairs = [
                    (j, st)
                    for j, st in zip((verdict(s, first) for s in scores), strict, strict=True)
                    if j is not None
                ]
                agree = sum(j == st for j, st in pairs)
                cells += [
                    agree / len(pairs) if pairs else None,
                    sum(j and not st for j, st in pairs),
                    sum(st and not j for j, st in pairs),
                ]
            rows.append(tuple(cells))
    note = (
        f"J only: credited by {first} and not by the strict matcher; S only: the reverse."
        if first
        else "No LLM judge verdicts in this run (`pmc score --judge ...` adds them); "
        "only the strict matcher is shown."
    )
    return Table(
        "recall_scorer_agreement",
        "Recall accuracy under each scorer, and judge/matcher agreement (paper Table 12)",
        ("system", "kind", "rollouts", *models, STRICT, "agree", "J only", "S only"),
        tuple(rows),
        note,
    )
