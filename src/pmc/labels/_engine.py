"""The deterministic rule engine that labels a conversation (paper section 3.2).

From each speaker's voice activity and words:

1. Close gaps of at most 250 ms inside one speaker's activity; what remains are speech runs.
2. A run of at most 1 s and two words while the other speaker holds the floor (spoke before it and
   goes on after it, before this speaker does) is a backchannel.
3. Every other run's offset is classified by looking 5 s ahead: the same speaker resumes first,
   a pause; the other speaker starts and yields (a short start, then the first speaker resumes),
   a pause and a failed take; the other speaker starts substantively, an end of turn; nobody
   speaks, an end of turn.
4. Turns run from a speaker's first run after an end of turn to the next end of turn; pauses are
   the gaps inside them. Overlaps are the stretches where both speakers' runs are voiced at once.

The engine is symmetric in the two speakers by construction, and its ids come from content.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from pmc.corpus import Channel, Conversation, Word, WordSource
from pmc.labels._types import Flag, Label, LabelKind, Labels, Rule, label_id

ENGINE_VERSION = 1


@dataclass(frozen=True)
class EngineSettings:
    """The engine's parameters; every labels file records them."""

    bridge_s: float = 0.25
    """Gaps up to this inside one speaker's activity are closed (paper section 3.2)."""
    backchannel_max_s: float = 1.0
    """A backchannel lasts at most 1 s (paper section 3.2)."""
    backchannel_max_words: int = 2
    """... and has at most two words (paper section 3.2)."""
    lookahead_s: float = 5.0
    """How far past an offset the engine looks (paper section 3.2)."""
    take_max_s: float = 2.5
    """A failed take lasts at most this. Ours: the paper does not say; a false start of up to five
    words at a conversational 2 to 3 words per second."""
    take_max_words: int = 5
    """... and has at most this many words (ours, as above)."""
    yield_overlap_s: float = 0.5
    """The other yields when they stop within this after the first speaker resumes over them
    (ours: the paper says only "starts and yields")."""
    short_turn_s: float = 0.4
    """A lexical turn shorter than this is flagged (paper section 3.2)."""
    gap_fill_share: float = 0.5
    """A turn with at least this share of gap-fill words is flagged (paper section 3.2)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return asdict(self)


class _Role(StrEnum):
    SPEECH = "speech"
    BACKCHANNEL = "backchannel"
    TAKE = "take"


@dataclass
class _Run:
    """One speaker's stretch of speech after gap closing (mutable only while the engine runs)."""

    speaker: Channel
    start: float
    end: float
    words: list[Word] = field(default_factory=list)
    role: _Role = _Role.SPEECH
    offset: Rule | None = None
    """How the offset at this run's end was classified."""
    confidence: float = 1.0
    floor_transfer_s: float | None = None
    next_start: float | None = None
    """The same speaker's next speech run after a pause."""
    pinned: bool = False
    """Part of its own speaker's turn for certain: never a backchannel or a failed take."""
    claimed: bool = False
    """The resumption after one of its speaker's pauses (this pass): never a failed take."""

    @property
    def duration(self) -> float:
        return self.end - self.start


def _runs(conversation: Conversation, channel: Channel, bridge_s: float) -> list[_Run]:
    """Speech runs of one speaker: activity and word spans, with short gaps closed."""
    speaker = conversation.speaker(channel)
    spans = sorted(
        [(a.start_conv_s, a.end_conv_s) for a in speaker.activity]
        + [(w.start_conv_s, w.end_conv_s) for w in speaker.words]
    )
    runs: list[_Run] = []
    for start, end in spans:
        if runs and start - runs[-1].end <= bridge_s:
            runs[-1].end = max(runs[-1].end, end)
        else:
            runs.append(_Run(channel, start, end))
    starts = [r.start for r in runs]
    for word in speaker.words:
        middle = (word.start_conv_s + word.end_conv_s) / 2
        runs[bisect_right(starts, middle) - 1].words.append(word)
    return runs


class _Index:
    """Fast lookups over one speaker's runs (sorted, never overlapping)."""

    def __init__(self, runs: list[_Run]) -> None:
        self.runs = runs
        self.starts = [r.start for r in runs]

    def last_starting_before(self, t: float) -> _Run | None:
        i = bisect_left(self.starts, t) - 1
        return self.runs[i] if i >= 0 else None

    def covering(self, t: float) -> _Run | None:
        run = self.last_starting_before(t)
        return run if run is not None and run.end > t else None

    def from_time(self, t: float, limit: float) -> list[_Run]:
        """Runs still voiced after ``t`` that start before ``limit``."""
        i = max(bisect_right(self.starts, t) - 1, 0)
        out = []
        for run in self.runs[i:]:
            if run.start >= limit:
                break
            if run.end > t:
                out.append(run)
        return out

    def first_starting_after(self, t: float, role: _Role | None = None) -> _Run | None:
        for run in self.runs[bisect_right(self.starts, t) :]:
            if role is None or run.role is role:
                return run
        return None


def _is_short(run: _Run, s: EngineSettings) -> bool:
    return run.duration <= s.backchannel_max_s and len(run.words) <= s.backchannel_max_words


def _mark_backchannels(runs: list[_Run], own: _Index, other: _Index, s: EngineSettings) -> None:
    """Mark short runs made while the other speaker holds the floor.

    The floor is judged from the other speaker's runs that are not short themselves, so a
    response to a backchannel is not a backchannel.
    """
    floor = _Index([r for r in other.runs if not _is_short(r, s)])
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
        run.role = _Role.BACKCHANNEL


@dataclass(frozen=True)
class _Decision:
    """What an offset is, and the other speaker's runs it turns into a failed take."""

    rule: Rule
    confidence: float
    next_start: float | None = None
    floor_transfer_s: float | None = None
    takes: tuple[_Run, ...] = ()
    resume: _Run | None = None
    """For a pause: the run in which the same speaker goes on."""


def _decide(run: _Run, own: _Index, other: _Index, s: EngineSettings) -> _Decision:
    """Classify the offset at the end of ``run`` by looking ``lookahead_s`` ahead."""
    t = run.end
    resume = own.first_starting_after(t, _Role.SPEECH)
    horizon = t + s.lookahead_s
    limit = min(resume.start if resume else horizon, horizon)
    starts = [r for r in other.from_time(t, limit) if r.role is _Role.SPEECH]
    if not starts:
        if resume is not None and resume.start <= horizon:
            gap = resume.start - t
            confidence = _fade(gap, 2.0, s.lookahead_s)
            return _Decision(
                Rule.PAUSE_SAME_SPEAKER_RESUMES, confidence, resume.start, resume=resume
            )
        after = other.first_starting_after(t, _Role.SPEECH)
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


def _apply(run: _Run, decision: _Decision) -> None:
    run.offset = decision.rule
    run.confidence = decision.confidence
    run.next_start = decision.next_start
    run.floor_transfer_s = decision.floor_transfer_s
    for take in decision.takes:
        take.role = _Role.TAKE
    if decision.resume is not None:
        decision.resume.claimed = True


def _decide_offsets(
    runs: dict[Channel, list[_Run]], index: dict[Channel, _Index], s: EngineSettings
) -> None:
    """Classify every speech run's offset, in time order.

    A failed take found at one offset is known at later ones, and a pause's resumption can no
    longer become one. Offsets at the same instant are decided together: each sees the state
    before any of them; only one whose resumption became another's failed take is decided again.
    Neither speaker goes first, so swapping the speakers swaps the labels and nothing else.
    """
    other = {Channel.A: Channel.B, Channel.B: Channel.A}
    by_end: dict[float, list[_Run]] = {}
    for c in Channel:
        for run in runs[c]:
            if run.role is _Role.TAKE:
                run.role = _Role.SPEECH
            run.offset, run.claimed = None, False
            by_end.setdefault(run.end, []).append(run)
    for t in sorted(by_end):
        group = [r for r in by_end[t] if r.role is _Role.SPEECH]
        first = [_decide(r, index[r.speaker], index[other[r.speaker]], s) for r in group]
        for decision in first:
            for take in decision.takes:
                take.role = _Role.TAKE
        for run, decision in zip(group, first, strict=True):
            if decision.resume is not None and decision.resume.role is _Role.TAKE:
                # Its resumption is another offset's failed take: decide again without it.
                decision = _decide(run, index[run.speaker], index[other[run.speaker]], s)
            _apply(run, decision)


def _inside_own_turns(runs: list[_Run]) -> list[_Run]:
    """Backchannels and failed takes between the first and last run of their speaker's turn."""
    inside: list[_Run] = []
    others = [r for r in runs if r.role is not _Role.SPEECH]
    start: float | None = None
    for run in runs:
        if run.role is not _Role.SPEECH:
            continue
        start = run.start if start is None else start
        if run.offset not in _PAUSE_RULES:
            inside.extend(b for b in others if start < b.start < run.end)
            start = None
    return inside


_PAUSE_RULES = (Rule.PAUSE_SAME_SPEAKER_RESUMES, Rule.PAUSE_FAILED_TAKE)


def _fade(value: float, full_until: float, zero_at: float) -> float:
    """Confidence 1 up to ``full_until``, falling linearly to 0.6 at ``zero_at``."""
    if value <= full_until:
        return 1.0
    return round(1.0 - 0.4 * min(1.0, (value - full_until) / (zero_at - full_until)), 3)


def _r(t: float) -> float:
    return round(t, 6)


def label_conversation(
    conversation: Conversation, settings: EngineSettings | None = None
) -> Labels:
    """Label one conversation with the rule engine (paper section 3.2)."""
    s = settings or EngineSettings()
    runs = {c: _runs(conversation, c, s.bridge_s) for c in Channel}
    index = {c: _Index(runs[c]) for c in Channel}
    other = {Channel.A: Channel.B, Channel.B: Channel.A}
    for c in Channel:
        _mark_backchannels(runs[c], index[c], index[other[c]], s)
    # A backchannel or failed take can end up inside its own speaker's turn (when the floor it
    # answered turns out to be a failed take itself); it is then pinned as part of that turn and
    # the offsets are decided again. Each pass pins at least one more run, so the loop ends.
    _decide_offsets(runs, index, s)
    while inside := [r for c in Channel for r in _inside_own_turns(runs[c])]:
        for run in inside:
            run.role, run.pinned = _Role.SPEECH, True
        _decide_offsets(runs, index, s)
    cid = conversation.conversation_id
    labels: list[Label] = []
    for c in Channel:
        labels.extend(_speaker_labels(cid, runs[c], s))
    labels.extend(_overlaps(cid, runs[Channel.A], runs[Channel.B]))
    labels.sort(key=lambda x: (x.start_conv_s, x.kind.value, x.speaker or "", x.id))
    return Labels(
        conversation_id=cid,
        duration_s=conversation.duration_s,
        labels=tuple(labels),
        settings={"engine_version": ENGINE_VERSION, "engine": s.to_dict()},
    )


def _text(runs: list[_Run]) -> tuple[str, int, int]:
    words = [w for r in runs for w in r.words]
    gap_fill = sum(w.source is WordSource.GAP_FILL for w in words)
    return " ".join(w.text for w in words), len(words), gap_fill


def _speaker_labels(cid: str, runs: list[_Run], s: EngineSettings) -> list[Label]:
    labels: list[Label] = []
    turn: list[_Run] = []
    for run in runs:
        if run.role is _Role.BACKCHANNEL:
            text, n, filled = _text([run])
            rule, conf = Rule.BACKCHANNEL_SHORT_SEGMENT, 0.9 if n else 0.7
            labels.append(_label(cid, LabelKind.BACKCHANNEL, run, rule, conf, text, n, filled))
            continue
        if run.role is _Role.TAKE:
            text, n, filled = _text([run])
            rule = Rule.FAILED_TAKE_YIELDED
            labels.append(_label(cid, LabelKind.FAILED_TAKE, run, rule, 0.7, text, n, filled))
            continue
        turn.append(run)
        if run.offset in _PAUSE_RULES:
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


def _close_turn(cid: str, turn: list[_Run], s: EngineSettings) -> list[Label]:
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
    cid: str, kind: LabelKind, run: _Run, rule: Rule, conf: float, text: str, n: int, filled: int
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


def _overlaps(cid: str, a_runs: list[_Run], b_runs: list[_Run]) -> list[Label]:
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
