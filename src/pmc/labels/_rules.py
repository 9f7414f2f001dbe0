"""The engine's rules 2 and 3 (paper section 3.2): backchannels, then every offset's class.

Each rule gives runs a :class:`Role` or an offset :class:`Rule` in place; nothing here makes a
label.
"""

from __future__ import annotations

from dataclasses import dataclass

from pmc.corpus import Channel
from pmc.labels._runs import Role, Run, RunIndex
from pmc.labels._settings import EngineSettings
from pmc.labels._types import Rule

PAUSE_RULES = (Rule.PAUSE_SAME_SPEAKER_RESUMES, Rule.PAUSE_FAILED_TAKE)
"""The offset classes that keep the speaker's turn going."""


def _is_short(run: Run, s: EngineSettings) -> bool:
    return run.duration <= s.backchannel_max_s and len(run.words) <= s.backchannel_max_words


def mark_backchannels(runs: list[Run], own: RunIndex, other: RunIndex, s: EngineSettings) -> None:
    """Mark short runs made while the other speaker holds the floor.

    The floor is judged from the other speaker's runs that are not short themselves, so a
    response to a backchannel is not a backchannel.
    """
    floor = RunIndex([r for r in other.runs if not _is_short(r, s)])
    for run in runs:
        if not _is_short(run, s):
            continue
        before = floor.last_starting_before(run.start)
        if before is None or before.end < run.start - s.lookahead_s:
            continue  # the other speaker has not been talking: nobody's turn to respond to
        own_before = own.last_starting_before(run.start)
        if own_before is not None and own_before.end >= before.end:
            continue  # this speaker spoke last: a fragment of their own turn, not a response
        if floor.covering(run.end) is None:
            resume = floor.first_starting_after(run.end)
            own_next = own.first_starting_after(run.end)
            if resume is None or resume.start - run.end > s.lookahead_s:
                continue
            if own_next is not None and own_next.start < resume.start:
                continue  # this speaker goes on first: the start of a turn, not a response
        run.role = Role.BACKCHANNEL


@dataclass(frozen=True)
class _Decision:
    """What an offset is, and the other speaker's runs it turns into a failed take."""

    rule: Rule
    confidence: float
    next_start: float | None = None
    floor_transfer_s: float | None = None
    takes: tuple[Run, ...] = ()
    resume: Run | None = None
    """For a pause: the run in which the same speaker goes on."""


def _decide(run: Run, own: RunIndex, other: RunIndex, s: EngineSettings) -> _Decision:
    """Classify the offset at the end of ``run`` by looking ``lookahead_s`` ahead."""
    t = run.end
    resume = own.first_starting_after(t, Role.SPEECH)
    horizon = t + s.lookahead_s
    limit = min(resume.start if resume else horizon, horizon)
    starts = [r for r in other.from_time(t, limit) if r.role is Role.SPEECH]
    if not starts:
        if resume is not None and resume.start <= horizon:
            gap = resume.start - t
            confidence = _fade(gap, 2.0, s.lookahead_s)
            return _Decision(
                Rule.PAUSE_SAME_SPEAKER_RESUMES, confidence, resume.start, resume=resume
            )
        after = other.first_starting_after(t, Role.SPEECH)
        transfer = None
        if after is not None and (resume is None or after.start < resume.start):
            transfer = after.start - t
        sure = resume is None or resume.start > horizon + 2.0
        return _Decision(Rule.EOT_NOBODY_SPEAKS, 1.0 if sure else 0.8, None, transfer)
    words = sum(len(r.words) for r in starts)
    spoken = sum(r.end - max(r.start, t) for r in starts)
    last_end = max(r.end for r in starts)
    # Yielding: the other starts in (or just before) the pause, the first speaker resumes while
    # the other is still talking, and the other stops soon after. A short reply that ends before
    # the first speaker goes on is a turn.
    if (
        resume is not None
        and resume.start <= horizon
        and words <= s.take_max_words
        and spoken <= s.take_max_s
        and resume.start < last_end <= resume.start + s.yield_overlap_s
        and starts[0].start >= t - s.yield_overlap_s
        and not any(r.pinned or r.claimed for r in starts)
    ):
        return _Decision(Rule.PAUSE_FAILED_TAKE, 0.7, resume.start, None, tuple(starts), resume)
    first = next((r for r in starts if r.start >= run.start), None)
    return _Decision(
        Rule.EOT_OTHER_SPEAKER_STARTS,
        1.0 if words > 2 * s.take_max_words or resume is None else 0.8,
        None,
        None if first is None else first.start - t,
    )


def _apply(run: Run, decision: _Decision) -> None:
    run.offset = decision.rule
    run.confidence = decision.confidence
    run.next_start = decision.next_start
    run.floor_transfer_s = decision.floor_transfer_s
    for take in decision.takes:
        take.role = Role.TAKE
    if decision.resume is not None:
        decision.resume.claimed = True


def decide_offsets(
    runs: dict[Channel, list[Run]], index: dict[Channel, RunIndex], s: EngineSettings
) -> None:
    """Classify every speech run's offset, in time order.

    A failed take found at one offset is known at later ones, and a pause's resumption can no
    longer become one. Offsets at the same instant are decided together: each sees the state
    before any of them; only one whose resumption became another's failed take is decided again,
    seeing the others' first decisions (their failed takes and resumptions) but not each other's.
    Neither speaker goes first, so swapping the speakers swaps the labels and nothing else.
    """
    other = {Channel.A: Channel.B, Channel.B: Channel.A}
    by_end: dict[float, list[Run]] = {}
    for c in Channel:
        for run in runs[c]:
            if run.role is Role.TAKE:
                run.role = Role.SPEECH
            run.offset, run.claimed = None, False
            by_end.setdefault(run.end, []).append(run)
    for t in sorted(by_end):
        group = [r for r in by_end[t] if r.role is Role.SPEECH]
        first = [_decide(r, index[r.speaker], index[other[r.speaker]], s) for r in group]
        for decision in first:
            for take in decision.takes:
                take.role = Role.TAKE
        # An offset whose resumption became another's failed take is decided again without it,
        # once every other decision of the instant holds; all of them before any is applied.
        lost = [d.resume is not None and d.resume.role is Role.TAKE for d in first]
        for run, decision, again in zip(group, first, lost, strict=True):
            if not again:
                _apply(run, decision)
        redo = [
            (run, _decide(run, index[run.speaker], index[other[run.speaker]], s))
            for run, again in zip(group, lost, strict=True)
            if again
        ]
        for run, decision in redo:
            _apply(run, decision)


def inside_own_turns(runs: list[Run]) -> list[Run]:
    """Backchannels and failed takes between the first and last run of their speaker's turn."""
    inside: list[Run] = []
    others = [r for r in runs if r.role is not Role.SPEECH]
    start: float | None = None
    for run in runs:
        if run.role is not Role.SPEECH:
            continue
        start = run.start if start is None else start
        if run.offset not in PAUSE_RULES:
            inside.extend(b for b in others if start < b.start < run.end)
            start = None
    return inside


def _fade(value: float, full_until: float, zero_at: float) -> float:
    """Confidence 1 up to ``full_until``, falling linearly to 0.6 at ``zero_at``."""
    if value <= full_until:
        return 1.0
    return round(1.0 - 0.4 * min(1.0, (value - full_until) / (zero_at - full_until)), 3)
