"""The engine against people, and people against each other (paper appendix B, Table 6).

Engine turns are matched to human turns as the paper does: each engine turn to the human turn
of the same speaker that overlaps it most, matched when that overlap covers more than half of
the engine turn. docs/review.md says how every column is counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

from pmc.labels import Label, LabelKind, Labels
from pmc.review._standing import is_stale, latest_window_decisions
from pmc.review._types import Decision, Entry, Reason
from pmc.table import Cell, Table

MATCH_SHARE = 0.5
"""Matched: the overlap covers more than half of the engine turn (paper appendix B)."""
MOVE_THRESHOLDS_S = (0.1, 0.25, 1.0)
"""Boundaries moved by more than 100 ms, 250 ms and 1 s (paper appendix B)."""
AGREEMENT_THRESHOLDS_S = (0.1, 0.25)
"""Two people's boundaries agree within 100 and 250 ms (paper appendix E)."""


def overlap_s(a: Label, b: Label) -> float:
    """How long two labels overlap, in seconds (0 when apart)."""
    return max(0.0, min(a.end_conv_s, b.end_conv_s) - max(a.start_conv_s, b.start_conv_s))


def best_match(turn: Label, others: Sequence[Label]) -> Label | None:
    """The label of the same speaker overlapping ``turn`` most, if it covers over half of it."""
    mine = [o for o in others if o.speaker is turn.speaker]
    if not mine or turn.duration_s <= 0:
        return None
    best = max(mine, key=lambda o: (overlap_s(turn, o), -o.start_conv_s))
    return best if overlap_s(turn, best) > MATCH_SHARE * turn.duration_s else None


def moved_s(a: Label, b: Label) -> float:
    """The larger of the two boundary shifts between matched turns."""
    return max(abs(a.start_conv_s - b.start_conv_s), abs(a.end_conv_s - b.end_conv_s))


@dataclass(frozen=True)
class EngineVsHuman:
    """Table 6's counts for one reviewer over the conversations they re-annotated."""

    reviewer: str
    conversations: int
    minutes: float
    engine_turns: int
    human_turns: int
    matched: int
    made_backchannels: int
    moved: tuple[int, ...]
    """Matched turns moved by more than each of :data:`MOVE_THRESHOLDS_S`."""
    flagged: int
    flagged_changed: int
    unflagged: int
    unflagged_changed: int


def engine_vs_human(
    reviewer: str, engine: Mapping[str, Labels], human: Mapping[str, Labels]
) -> EngineVsHuman:
    """Compare the engine's turns with one reviewer's, over the conversations both labelled.

    A turn "changed" when it found no match or a boundary moved by more than 100 ms; it was
    "made a backchannel" when, unmatched, a human backchannel of its speaker covers over half.
    """
    shared = sorted(set(engine) & set(human))
    counts = {"engine": 0, "human": 0, "matched": 0, "bc": 0}
    moved = [0] * len(MOVE_THRESHOLDS_S)
    flags = {True: [0, 0], False: [0, 0]}  # flagged? -> [turns, changed]
    minutes = 0.0
    for cid in shared:
        e, h = engine[cid], human[cid]
        minutes += e.duration_s / 60.0
        human_turns = h.of(LabelKind.TURN)
        backchannels = h.of(LabelKind.BACKCHANNEL)
        counts["human"] += len(human_turns)
        for turn in e.of(LabelKind.TURN):
            counts["engine"] += 1
            match = best_match(turn, human_turns)
            shift = moved_s(turn, match) if match is not None else None
            if match is not None and shift is not None:
                counts["matched"] += 1
                for i, threshold in enumerate(MOVE_THRESHOLDS_S):
                    moved[i] += shift > threshold
            elif best_match(turn, backchannels) is not None:
                counts["bc"] += 1
            changed = shift is None or shift > MOVE_THRESHOLDS_S[0]
            tally = flags[bool(turn.flags)]
            tally[0] += 1
            tally[1] += changed
    return EngineVsHuman(
        reviewer,
        len(shared),
        minutes,
        counts["engine"],
        counts["human"],
        counts["matched"],
        counts["bc"],
        tuple(moved),
        flags[True][0],
        flags[True][1],
        flags[False][0],
        flags[False][1],
    )


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def engine_table(rows: Sequence[EngineVsHuman]) -> Table:
    """Table 6's analog: one row per reviewer."""
    moved_names = tuple(f"moved > {t * 1000:g} ms" for t in MOVE_THRESHOLDS_S)
    body: list[tuple[Cell, ...]] = []
    for r in rows:
        body.append(
            (
                r.reviewer,
                r.conversations,
                round(r.minutes, 1),
                r.engine_turns,
                r.human_turns,
                r.matched,
                _share(r.matched, r.engine_turns),
                r.made_backchannels,
                _share(r.made_backchannels, r.engine_turns),
                *(_share(m, r.matched) for m in r.moved),
                r.flagged,
                _share(r.flagged_changed, r.flagged),
                r.unflagged,
                _share(r.unflagged_changed, r.unflagged),
            )
        )
    return Table(
        "review_engine_vs_human",
        "The engine's turns against human labels (paper Table 6)",
        (
            "reviewer",
            "conversations",
            "minutes",
            "engine turns",
            "human turns",
            "matched",
            "matched share",
            "made backchannels",
            "backchannel share",
            *moved_names,
            "flagged turns",
            "flagged changed",
            "unflagged turns",
            "unflagged changed",
        ),
        tuple(body),
        note="Matched: an engine turn whose overlap with a human turn of the same speaker "
        "exceeds half its length. Moved: shares of matched turns whose start or end moved by "
        "more than the bound. Made backchannels: unmatched engine turns that a human "
        "backchannel of the same speaker covers by more than half. Changed: unmatched, or "
        "moved by more than 100 ms.",
    )


def cohen_kappa(a: Sequence[bool], b: Sequence[bool]) -> float | None:
    """Cohen's kappa of two raters' yes/no decisions on the same items (None if undefined)."""
    n = len(a)
    if n == 0 or n != len(b):
        return None
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pa, pb = sum(a) / n, sum(b) / n
    expected = pa * pb + (1 - pa) * (1 - pb)
    if expected >= 1.0:
        return None  # both always said the same one thing: agreement beyond chance is undefined
    return (observed - expected) / (1.0 - expected)


def _boundaries(one: Labels, two: Labels) -> list[float]:
    """Shifts of the start and end of every turn of ``one`` that matches a turn of ``two``."""
    shifts = []
    turns = two.of(LabelKind.TURN)
    for turn in one.of(LabelKind.TURN):
        match = best_match(turn, turns)
        if match is not None:
            shifts.append(abs(turn.start_conv_s - match.start_conv_s))
            shifts.append(abs(turn.end_conv_s - match.end_conv_s))
    return shifts


def reviewers_table(
    entries: Sequence[Entry],
    current: Mapping[str, str],
    human: Mapping[str, Mapping[str, Labels]],
) -> Table:
    """Each pair of reviewers: accept/reject agreement and kappa; turn boundaries agreeing.

    Args:
        entries: Every decision, in the order written.
        current: Each window's label content hash now (stale decisions are left out).
        human: Each reviewer's labels, by conversation.
    """
    standing: dict[str, dict[str, bool]] = {}
    for (reviewer, window_id), entry in latest_window_decisions(entries).items():
        if not is_stale(entry, current.get(window_id)):
            standing.setdefault(reviewer, {})[window_id] = entry.decision is Decision.ACCEPT
    names = sorted({*standing, *human})
    rows: list[tuple[Cell, ...]] = []
    for one, two in combinations(names, 2):
        both = sorted(set(standing.get(one, {})) & set(standing.get(two, {})))
        a = [standing[one][w] for w in both]
        b = [standing[two][w] for w in both]
        agree = sum(x == y for x, y in zip(a, b, strict=True))
        kappa = cohen_kappa(a, b)
        conversations = sorted(set(human.get(one, {})) & set(human.get(two, {})))
        shifts = [s for c in conversations for s in _boundaries(human[one][c], human[two][c])]
        within = [sum(s <= t for s in shifts) for t in AGREEMENT_THRESHOLDS_S]
        rows.append(
            (
                one,
                two,
                len(both),
                _share(agree, len(both)),
                None if kappa is None else round(kappa, 3),
                len(conversations),
                len(shifts),
                *(_share(w, len(shifts)) for w in within),
            )
        )
    return Table(
        "review_reviewers",
        "Reviewers against each other",
        (
            "reviewer",
            "other reviewer",
            "windows both decided",
            "agreement",
            "Cohen's kappa",
            "conversations both labelled",
            "matched boundaries",
            *(f"within {t * 1000:g} ms" for t in AGREEMENT_THRESHOLDS_S),
        ),
        tuple(rows),
        note="Windows: each reviewer's latest decision that still judges the label as it is. "
        "Kappa is empty where it is undefined (both reviewers gave one answer throughout). "
        "Boundaries: the start and end of every turn of the first reviewer matched to the "
        "second's (the same rule as Table 6).",
    )


def decisions_table(
    entries: Sequence[Entry], current: Mapping[str, str], windows: Sequence[str] | None = None
) -> Table:
    """Each reviewer's standing decisions on windows: accepted, rejected by reason, stale.

    Args:
        entries: Every decision, in the order written.
        current: Each window's label content hash now.
        windows: Only these windows (a run's points); all when None.
    """
    scope = None if windows is None else set(windows)
    tallies: dict[str, dict[str, int]] = {}
    for (reviewer, window_id), entry in sorted(latest_window_decisions(entries).items()):
        if scope is not None and window_id not in scope:
            continue
        tally = tallies.setdefault(reviewer, {})
        if is_stale(entry, current.get(window_id)):
            key = "stale"
        elif entry.decision is Decision.ACCEPT:
            key = "accepted"
        else:
            key = str(entry.reason)
        tally[key] = tally.get(key, 0) + 1
    reasons = [r.value for r in Reason]
    rows: tuple[tuple[Cell, ...], ...] = tuple(
        (
            reviewer,
            sum(t.values()),
            t.get("accepted", 0),
            *(t.get(r, 0) for r in reasons),
            t.get("stale", 0),
        )
        for reviewer, t in sorted(tallies.items())
    )
    return Table(
        "review_decisions",
        "Window decisions per reviewer",
        ("reviewer", "windows", "accepted", *(f"rejected: {r}" for r in reasons), "stale"),
        rows,
        note="Each reviewer's latest decision per window. Stale: the label it judged has "
        "changed since, so it counts for nothing until the window is judged again.",
    )
