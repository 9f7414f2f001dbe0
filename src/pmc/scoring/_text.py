"""Words of a transcript: tokens, token F1, content words and the strict recall matcher.

Tokens are the lower-case alphanumeric runs of a text (docs/architecture.md "Metrics"; the reference
implementation's ``re.findall("[a-z0-9]+", text.lower())``), with three normalisations so that
speech recognition's spelling choices do not decide a score:

- Accents are dropped (``café`` -> ``cafe``) instead of splitting a word at them.
- Digit groups lose their thousands separators (``1,000`` -> ``1000``).
- Number words become digits: ``seven`` -> ``7``, ``seventeen`` -> ``17``, ``twenty one`` and
  ``twenty-one`` -> ``21``; ordinals become digit ordinals, ``first`` -> ``1st``,
  ``twenty-first`` -> ``21st``, so they match ``1st`` and ``21st`` but never the cardinal ``1``
  ("at first" is not "one"). Only 0 to 99 are covered: ``hundred``, ``thousand`` and spoken
  years (``nineteen ninety``) stay as they are, and ``3.5`` is the two tokens ``3`` and ``5``.

Apostrophes split words, as in the reference (``don't`` -> ``don``, ``t``); the stop-word list
holds those pieces.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from typing import Any

from pmc.points import PointKind

STRICT_VERSION = "strict-1"
"""The matcher's version, stored in every verdict; bump it when the stop words or rules change."""

RECALL_KINDS = (PointKind.FACT_RECALL, PointKind.CONVERSATION_RECALL)
"""The point kinds the strict matcher scores."""

CONVERSATION_SHARE = 0.5
"""Conversation recall needs at least half of the gold content words (paper appendix E, Table 12
"strict matcher": "for conversation recall, at least half of them"); fact recall needs all."""

STOP_WORDS: frozenset[str] = frozenset(
    """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his himself
    she her hers herself it its itself they them their theirs themselves what which who whom
    this that these those am is are was were be been being have has had having do does did
    doing a an the and but if or because as until while of at by for with about against between
    into through during before after above below to from up down in out on off over under again
    further then once here there when where why how all any both each few more most other some
    such no nor not only own same so than too very s t can will just don should now d ll m o re
    ve y ain aren couldn didn doesn hadn hasn haven isn ma mightn mustn needn shan shouldn wasn
    weren won wouldn
    """.split()
)
"""NLTK's English stop-word list (``nltk_data`` corpus ``stopwords/english``, the 153 words it
held before 2018, when its later 179-word edition added the same contractions spelled with an
apostrophe). The apostrophe forms are not needed: :func:`tokens` splits ``don't`` into ``don``
and ``t``, both listed. Written down here so the matcher needs no download and never changes
under us. The paper's matcher's list is not published (docs/decisions.md section 7)."""

_UNITS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_UNIT_ORDINALS = (
    "zeroth first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth "
    "thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth"
).split()
_TEN_ORDINALS = (
    "twentieth thirtieth fortieth fiftieth sixtieth seventieth eightieth ninetieth".split()
)


def _ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``, ``11th``, ``12th``, ``13th``, ``21st``..."""
    suffix = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


_CARDINALS = {w: n for n, w in enumerate(_UNITS)} | {w: 20 + 10 * i for i, w in enumerate(_TENS)}
_ORDINALS = {w: n for n, w in enumerate(_UNIT_ORDINALS)} | {
    w: 20 + 10 * i for i, w in enumerate(_TEN_ORDINALS)
}
_NUMBER_WORDS = {w: str(n) for w, n in _CARDINALS.items()} | {
    w: _ordinal(n) for w, n in _ORDINALS.items()
}
"""Every single number word and its digit token."""

_COMPOUND = re.compile(
    rf"\b({'|'.join(_TENS)})(?:-|\s+)({'|'.join(_UNITS[1:10] + _UNIT_ORDINALS[1:10])})\b"
)
"""A tens word and a unit word 1 to 9 joined by a hyphen or spaces (not by punctuation:
"I was twenty. One day..." is two numbers)."""

_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_TOKEN = re.compile(r"[a-z0-9]+")


def _compound(match: re.Match[str]) -> str:
    tens, unit = _CARDINALS[match.group(1)], match.group(2)
    if unit in _CARDINALS:
        return str(tens + _CARDINALS[unit])
    return _ordinal(tens + _ORDINALS[unit])


def tokens(text: str) -> list[str]:
    """The lower-case alphanumeric tokens of ``text``, numbers as digits (see the module doc).

    Args:
        text: Any text, e.g. a transcript.

    Returns:
        The tokens in order, repeats kept.
    """
    decomposed = unicodedata.normalize("NFKD", text.lower())
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    plain = _COMPOUND.sub(_compound, _THOUSANDS.sub("", plain))
    return [_NUMBER_WORDS.get(t, t) for t in _TOKEN.findall(plain)]


def has_words(text: str) -> bool:
    """Whether ``text`` holds at least one token; similarities of a text without are 0."""
    return bool(tokens(text))


def token_f1(hypothesis: str, reference: str) -> float:
    """Multiset token F1 of ``hypothesis`` against ``reference`` (docs/architecture.md "Metrics").

    Precision is the shared tokens over the hypothesis's tokens, recall the shared tokens over the
    reference's, each token counted as often as it occurs on both sides (``min`` of the counts).

    When either side has no tokens the F1 is 0.0, as in the reference implementation; the scores
    only report similarities of rollouts with words (docs/architecture.md "Reporting"), and a
    turn-end point's human reply always has words, so 0.0 there only reaches a caller that skipped
    that rule.

    Args:
        hypothesis: What the system said.
        reference: What the person said.

    Returns:
        F1 in [0, 1].
    """
    hyp, ref = Counter(tokens(hypothesis)), Counter(tokens(reference))
    shared = sum((hyp & ref).values())
    if shared == 0:  # also covers an empty side
        return 0.0
    precision = shared / sum(hyp.values())
    recall = shared / sum(ref.values())
    return 2 * precision * recall / (precision + recall)


def content_words(text: str) -> list[str]:
    """The tokens of ``text`` that are not stop words, each once, in order of first appearance.

    Args:
        text: Any text, e.g. a gold answer.
    """
    return list(dict.fromkeys(t for t in tokens(text) if t not in STOP_WORDS))


@dataclass(frozen=True)
class StrictVerdict:
    """What the strict word matcher said of one recall answer (paper appendix E, Table 12).

    Attributes:
        kind: Fact recall or conversation recall.
        correct: At least ``needed`` of ``words`` appear in the transcript.
        words: The gold answer's content words (all its words when it has only stop words).
        matched: Those of ``words`` that the transcript holds, in the order of ``words``.
        needed: How many must match: all for fact recall, half (rounded up) for conversation
            recall.
        version: The matcher's version (:data:`STRICT_VERSION`).
    """

    kind: PointKind
    correct: bool
    words: tuple[str, ...]
    matched: tuple[str, ...]
    needed: int
    version: str = STRICT_VERSION

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "kind": self.kind.value,
            "correct": self.correct,
            "words": list(self.words),
            "matched": list(self.matched),
            "needed": self.needed,
            "version": self.version,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StrictVerdict:
        """Inverse of :meth:`to_dict`."""
        return cls(
            kind=PointKind(data["kind"]),
            correct=bool(data["correct"]),
            words=tuple(str(w) for w in data["words"]),
            matched=tuple(str(w) for w in data["matched"]),
            needed=int(data["needed"]),
            version=str(data["version"]),
        )


def strict_recall(transcript: str, gold_answer: str, kind: PointKind) -> StrictVerdict:
    """Score a recall answer by its words alone, with no model (paper appendix E, Table 12).

    Fact recall is correct when every content word of the gold answer appears in the transcript;
    conversation recall when at least half of them do (rounded up, so one of one, one of two, two
    of three). Matching is exact on :func:`tokens`: no stemming or synonyms, which is the point
    of a strict matcher. A gold answer made only of stop words (``"No"``) uses all its tokens,
    so it still needs a word. An empty transcript is never correct.

    Args:
        transcript: What the system said.
        gold_answer: The answer a correct reply states.
        kind: :attr:`PointKind.FACT_RECALL` or :attr:`PointKind.CONVERSATION_RECALL`.

    Raises:
        ValueError: ``kind`` is not a recall kind, or the gold answer has no words.
    """
    if kind not in RECALL_KINDS:
        raise ValueError(f"the strict matcher scores recall points, not {kind.value}")
    words = content_words(gold_answer) or list(dict.fromkeys(tokens(gold_answer)))
    if not words:
        raise ValueError(f"gold answer {gold_answer!r} has no words to match")
    said = set(tokens(transcript))
    matched = tuple(w for w in words if w in said)
    if kind is PointKind.FACT_RECALL:
        needed = len(words)
    else:
        needed = math.ceil(CONVERSATION_SHARE * len(words))
    return StrictVerdict(kind, len(matched) >= needed, tuple(words), matched, needed)
