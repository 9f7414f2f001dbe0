"""The engine's rule 4 (paper section 3.2): classified runs become labels.

Turns run from a speaker's first run after an end of turn to the next end of turn; pauses are
the gaps inside them; backchannels and failed takes are labelled as they are; overlaps are the
stretches where both speakers' runs are voiced at once. Times are kept to the microsecond.
"""

from __future__ import annotations

from pmc.corpus import WordSource
from pmc.labels._rules import PAUSE_RULES
from pmc.labels._runs import Role, Run
from pmc.labels._settings import EngineSettings
from pmc.labels._types import Flag, Label, LabelKind, Rule, label_id


def _r(t: float) -> float:
    return round(t, 6)


def _text(runs: list[Run]) -> tuple[str, int, int]:
    words = [w for r in runs for w in r.words]
    gap_fill = sum(w.source is WordSource.GAP_FILL for w in words)
    return " ".join(w.text for w in words), len(words), gap_fill


def speaker_labels(cid: str, runs: list[Run], s: EngineSettings) -> list[Label]:
    """One speaker's turns, pauses, ends of turn, backchannels and failed takes."""
    labels: list[Label] = []
    turn: list[Run] = []
    for run in runs:
        if run.role is Role.BACKCHANNEL:
            text, n, filled = _text([run])
            rule, conf = Rule.BACKCHANNEL_SHORT_SEGMENT, 0.9 if n else 0.7
            labels.append(_label(cid, LabelKind.BACKCHANNEL, run, rule, conf, text, n, filled))
            continue
        if run.role is Role.TAKE:
            text, n, filled = _text([run])
            rule = Rule.FAILED_TAKE_YIELDED
            labels.append(_label(cid, LabelKind.FAILED_TAKE, run, rule, 0.7, text, n, filled))
            continue
        turn.append(run)
        if run.offset in PAUSE_RULES:
            start = _r(run.end)
            end = _r(run.next_start if run.next_start is not None else run.end)
            labels.append(
                Label(
                    label_id(cid, run.speaker, LabelKind.PAUSE, start),
                    LabelKind.PAUSE,
                    run.speaker,
                    start,
                    end,
                    run.offset,
                    run.confidence,
                )
            )
            continue
        labels.extend(_close_turn(cid, turn, s))
        turn = []
    return labels


def _close_turn(cid: str, turn: list[Run], s: EngineSettings) -> list[Label]:
    first, last = turn[0], turn[-1]
    text, n, filled = _text(turn)
    flags = []
    if n and filled >= s.gap_fill_share * n:
        flags.append(Flag.GAP_FILL_WORDS)
    if n and last.end - first.start < s.short_turn_s:
        flags.append(Flag.SHORT_LEXICAL_TURN)
    start, end = _r(first.start), _r(last.end)
    speaker = first.speaker
    rule = last.offset or Rule.EOT_NOBODY_SPEAKS
    transfer = None if last.floor_transfer_s is None else _r(last.floor_transfer_s)
    return [
        Label(
            label_id(cid, speaker, LabelKind.TURN, start),
            LabelKind.TURN,
            speaker,
            start,
            end,
            Rule.TURN_SPAN,
            min(r.confidence for r in turn),
            tuple(flags),
            text,
            n,
            filled,
        ),
        Label(
            label_id(cid, speaker, LabelKind.END_OF_TURN, end),
            LabelKind.END_OF_TURN,
            speaker,
            end,
            end,
            rule,
            last.confidence,
            floor_transfer_s=transfer,
        ),
    ]


def _label(
    cid: str, kind: LabelKind, run: Run, rule: Rule, conf: float, text: str, n: int, filled: int
) -> Label:
    start = _r(run.start)
    return Label(
        label_id(cid, run.speaker, kind, start),
        kind,
        run.speaker,
        start,
        _r(run.end),
        rule,
        conf,
        (),
        text,
        n,
        filled,
    )


def overlaps(cid: str, a_runs: list[Run], b_runs: list[Run]) -> list[Label]:
    """Stretches where both speakers are voiced; the label belongs to who started second."""
    labels = []
    i = j = 0
    while i < len(a_runs) and j < len(b_runs):
        a, b = a_runs[i], b_runs[j]
        start, end = max(a.start, b.start), min(a.end, b.end)
        if start < end:
            # Who came in second; nobody when both started at the same instant.
            second = None if a.start == b.start else (a if a.start > b.start else b).speaker
            s0 = _r(start)
            labels.append(
                Label(
                    label_id(cid, second, LabelKind.OVERLAP, s0),
                    LabelKind.OVERLAP,
                    second,
                    s0,
                    _r(end),
                    Rule.OVERLAP_BOTH_VOICED,
                    1.0,
                )
            )
        if a.end < b.end:
            i += 1
        else:
            j += 1
    return labels
