"""Liveliness selection (paper section 3.1, appendix A): keep the conversations people talk in.

Six traits are measured from each candidate's labels; each trait is turned into a percentile rank
among all candidates, and a conversation's score is the mean of its six ranks.
"""

from __future__ import annotations

import string
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import astuple, dataclass, fields
from fractions import Fraction
from typing import Any

from pmc.corpus import Channel
from pmc.io import schema_version
from pmc.labels._types import Label, LabelKind, Labels
from pmc.table import Align, Table

SELECTION_SCHEMA_VERSION = 1

LIVELINESS_CUTOFF = 0.75
"""Paper section 3.1 and appendix A: the conversations scoring at least 0.75 are the corpus."""

SHORT_UTTERANCE_S = 1.0
"""An utterance shorter than this counts as short (the trait ``short_utterance_rate``)."""

QUESTION_OPENERS = frozenset(
    {
        "what",
        "why",
        "how",
        "who",
        "where",
        "when",
        "which",
        "do",
        "does",
        "did",
        "is",
        "are",
        "was",
        "were",
        "can",
        "could",
        "would",
        "will",
        "should",
        "have",
        "has",
    }
)
"""English words that open a question; used only for transcripts without any question mark."""

TRAIT_DECIMALS = 9
"""Traits are rounded to this many decimals, so values equal on paper tie exactly in the ranks."""

_UTTERANCE_KINDS = (LabelKind.TURN, LabelKind.BACKCHANNEL, LabelKind.FAILED_TAKE)


@dataclass(frozen=True)
class Traits:
    """The six liveliness traits of one conversation (or their percentile ranks).

    Attributes:
        speech_balance: The quieter speaker's speech over the louder one's (turns and
            backchannels), 0 when neither speaks.
        alternations_per_min: Ends of turn handed to the other speaker, per minute.
        short_utterance_rate: Share of turns, backchannels and failed takes under 1 s.
        question_rate: Questions per minute.
        one_minus_longest_share: One minus the longest turn's share of the conversation (1 when
            there are no turns).
        overlaps_per_min: Overlaps per minute.
    """

    speech_balance: float
    alternations_per_min: float
    short_utterance_rate: float
    question_rate: float
    one_minus_longest_share: float
    overlaps_per_min: float

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The trait names, in field order."""
        return tuple(f.name for f in fields(cls))

    def values(self) -> tuple[float, ...]:
        """The trait values, in the order of :meth:`names`."""
        return tuple(float(v) for v in astuple(self))

    def to_dict(self) -> dict[str, float]:
        """Plain-JSON form."""
        return dict(zip(self.names(), self.values(), strict=True))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Traits:
        """Inverse of :meth:`to_dict`."""
        return cls(*(float(data[name]) for name in cls.names()))


@dataclass(frozen=True)
class SelectionRow:
    """One candidate: its traits, their percentile ranks, its score and whether it is kept."""

    conversation_id: str
    duration_s: float
    traits: Traits
    ranks: Traits
    score: float
    selected: bool

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "conversation_id": self.conversation_id,
            "duration_s": self.duration_s,
            "traits": self.traits.to_dict(),
            "ranks": self.ranks.to_dict(),
            "score": self.score,
            "selected": self.selected,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SelectionRow:
        """Inverse of :meth:`to_dict`."""
        return cls(
            conversation_id=str(data["conversation_id"]),
            duration_s=float(data["duration_s"]),
            traits=Traits.from_dict(data["traits"]),
            ranks=Traits.from_dict(data["ranks"]),
            score=float(data["score"]),
            selected=bool(data["selected"]),
        )


@dataclass(frozen=True)
class Selection:
    """The outcome of a selection: every candidate's row, sorted by conversation id."""

    cutoff: float
    rows: tuple[SelectionRow, ...]
    schema_version: int = SELECTION_SCHEMA_VERSION

    @property
    def selected_ids(self) -> tuple[str, ...]:
        """The ids of the selected conversations, sorted."""
        return tuple(row.conversation_id for row in self.rows if row.selected)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form, with the schema version."""
        return {
            "schema_version": self.schema_version,
            "cutoff": self.cutoff,
            "rows": [row.to_dict() for row in self.rows],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Selection:
        """Inverse of :meth:`to_dict`; refuses a schema version it does not know."""
        version = schema_version(data, SELECTION_SCHEMA_VERSION, "selection")
        return cls(
            cutoff=float(data["cutoff"]),
            rows=tuple(SelectionRow.from_dict(r) for r in data["rows"]),
            schema_version=version,
        )


def _minutes(labels: Labels) -> float:
    if labels.duration_s <= 0:
        raise ValueError(f"{labels.conversation_id}: duration must be positive")
    return labels.duration_s / 60.0


def _first_word(text: str) -> str:
    words = text.split()
    return words[0].lower().strip(string.punctuation) if words else ""


def _questions(turns: list[Label]) -> int:
    if any("?" in t.text for t in turns):
        return sum("?" in t.text for t in turns)
    # No question mark anywhere: the transcript is unpunctuated, so look at how turns open.
    return sum(_first_word(t.text) in QUESTION_OPENERS for t in turns)


def traits_of(labels: Labels) -> Traits:
    """Measure the six liveliness traits of one conversation.

    Raises:
        ValueError: If the conversation's duration is not positive.
    """
    minutes = _minutes(labels)
    turns = labels.of(LabelKind.TURN)
    speech = [
        sum(x.duration_s for k in (LabelKind.TURN, LabelKind.BACKCHANNEL) for x in labels.of(k, c))
        for c in Channel
    ]
    utterances = [x for k in _UTTERANCE_KINDS for x in labels.of(k)]
    handovers = [x for x in labels.of(LabelKind.END_OF_TURN) if x.floor_transfer_s is not None]
    longest = max((t.duration_s for t in turns), default=0.0)
    short = sum(x.duration_s < SHORT_UTTERANCE_S for x in utterances)
    raw = Traits(
        speech_balance=min(speech) / max(speech) if max(speech) > 0 else 0.0,
        alternations_per_min=len(handovers) / minutes,
        short_utterance_rate=short / len(utterances) if utterances else 0.0,
        question_rate=_questions(turns) / minutes,
        one_minus_longest_share=1.0 - longest / labels.duration_s,
        overlaps_per_min=len(labels.of(LabelKind.OVERLAP)) / minutes,
    )
    return Traits(*(round(v, TRAIT_DECIMALS) for v in raw.values()))


def _rank_numerators(values: Sequence[float]) -> list[int]:
    """Twice the count below plus the count equal (itself included): each rank times 2N."""
    ordered = sorted(values)
    return [bisect_left(ordered, v) + bisect_right(ordered, v) for v in values]


def select(labels: Sequence[Labels], cutoff: float = LIVELINESS_CUTOFF) -> Selection:
    """Score every candidate's liveliness and select those at or above ``cutoff``.

    The percentile rank of a value among N candidates is (the number of candidates with a
    strictly smaller value + 0.5 × the number with an equal value, itself included) / N, so tied
    candidates get the same rank and a lone candidate gets 0.5. The score is the mean of the six
    ranks. Scores are compared with the cutoff in exact arithmetic, and rows are sorted by
    conversation id, so the result does not depend on the order of ``labels``.

    Raises:
        ValueError: If the cutoff is outside [0, 1], two candidates share an id, or a
            candidate's duration is not positive.
    """
    if not 0.0 <= cutoff <= 1.0:
        raise ValueError(f"cutoff must be between 0 and 1, got {cutoff}")
    candidates = sorted(labels, key=lambda x: x.conversation_id)
    counts = Counter(x.conversation_id for x in candidates)
    duplicates = sorted(i for i, k in counts.items() if k > 1)
    if duplicates:
        raise ValueError(f"conversation ids appear more than once: {', '.join(duplicates)}")
    traits = [traits_of(x) for x in candidates]
    n = len(candidates)
    per_trait = [_rank_numerators([getattr(t, name) for t in traits]) for name in Traits.names()]
    rows = []
    for i, (x, t) in enumerate(zip(candidates, traits, strict=True)):
        nums = [column[i] for column in per_trait]
        # Each rank is nums[i] / 2N, so the score is sum(nums) / 12N: exact, then rounded once.
        exact = Fraction(sum(nums), 2 * n * len(nums))
        rows.append(
            SelectionRow(
                conversation_id=x.conversation_id,
                duration_s=x.duration_s,
                traits=t,
                ranks=Traits(*(k / (2 * n) for k in nums)),
                score=float(exact),
                selected=exact >= Fraction(cutoff),
            )
        )
    return Selection(cutoff=cutoff, rows=tuple(rows))


def _yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


def selection_table_markdown(selection: Selection) -> str:
    """A Markdown table: one row per candidate with its traits, score and whether it is kept."""
    names = Traits.names()
    table = Table(
        "selection",
        "Liveliness selection (paper section 3.1)",
        ("conversation", "minutes", *names, "score", "selected"),
        tuple(
            (
                row.conversation_id,
                f"{row.duration_s / 60.0:.1f}",
                *(f"{v:.3f}" for v in row.traits.values()),
                f"{row.score:.3f}",
                _yes_no(row.selected),
            )
            for row in selection.rows
        ),
    )
    numbers = (Align.RIGHT,) * (len(names) + 2)
    return table.markdown(heading=False, align=(Align.DEFAULT, *numbers, Align.CENTER))


def selection_csv(selection: Selection) -> str:
    """CSV with one row per candidate: duration, traits, their ranks, score and selected."""
    names = Traits.names()
    table = Table(
        "selection",
        "Liveliness selection (paper section 3.1)",
        (
            "conversation_id",
            "duration_s",
            *names,
            *(f"rank_{name}" for name in names),
            "score",
            "selected",
        ),
        tuple(
            (
                row.conversation_id,
                row.duration_s,
                *row.traits.values(),
                *row.ranks.values(),
                row.score,
                _yes_no(row.selected),
            )
            for row in selection.rows
        ),
    )
    return table.csv()
