"""The engine's rule 5 (ours; the paper has none): talk that comes over a reply.

A reply is a turn whose previous turn was the other speaker's. While it goes on, that other
speaker (the listener) may start a turn over it, after which the replier stops: a barge-in; or
give a backchannel, after which the replier goes on: a backchannel during a reply. Both are read
off the labels rules 1 to 4 made (turns, backchannels, overlaps), so they follow every choice
those rules make. docs/labels.md gives the rules and the reason for each threshold.
"""

from __future__ import annotations

from pmc.labels._settings import EngineSettings
from pmc.labels._types import Flag, Label, LabelKind, Rule, label_id


def _r(t: float) -> float:
    return round(t, 6)


def _replies(turns: list[Label]) -> list[Label]:
    """The turns whose previous turn was the other speaker's.

    The previous turn is the latest to start strictly before; where both speakers started one
    at that instant, neither is a reply to the other (so swapping the speakers swaps the labels).
    """
    found = []
    for turn in turns:
        earlier = [t for t in turns if t.start_conv_s < turn.start_conv_s]
        if not earlier or turn.speaker is None:
            continue
        latest = max(t.start_conv_s for t in earlier)
        before = {t.speaker for t in earlier if t.start_conv_s == latest}
        if before == {turn.speaker.other}:
            found.append(turn)
    return found


def _barge_in(
    cid: str, reply: Label, turns: list[Label], overlaps: list[Label], s: EngineSettings
) -> Label | None:
    """The listener's turn that starts inside ``reply`` and holds the floor after it, if any."""
    listener = None if reply.speaker is None else reply.speaker.other
    onset = next(
        (
            t
            for t in sorted(turns, key=lambda t: t.start_conv_s)
            if t.speaker is listener and t.start_conv_s > reply.start_conv_s
        ),
        None,
    )
    if onset is None or not (
        reply.start_conv_s + s.talk_over_min_offset_s
        <= onset.start_conv_s
        < reply.end_conv_s
        < onset.end_conv_s
    ):
        return None
    start, end = onset.start_conv_s, reply.end_conv_s
    both = sum(
        min(o.end_conv_s, end) - max(o.start_conv_s, start)
        for o in overlaps
        if o.end_conv_s > start and o.start_conv_s < end
    )
    yield_s = end - start
    terminal = yield_s < s.terminal_overlap_s
    return Label(
        label_id(cid, listener, LabelKind.BARGE_IN, _r(start)),
        LabelKind.BARGE_IN,
        listener,
        _r(start),
        _r(end),
        Rule.BARGE_IN_REPLIER_YIELDS,
        0.6 if terminal else 0.9,
        (Flag.TERMINAL_OVERLAP,) if terminal else (),
        onset.text,
        onset.words,
        onset.gap_fill_words,
        reply_offset_s=_r(start - reply.start_conv_s),
        yield_s=_r(yield_s),
        talk_over_s=_r(both),
    )


def _backchannels_in(
    cid: str, reply: Label, backchannels: list[Label], s: EngineSettings
) -> list[Label]:
    """The listener's backchannels inside ``reply``, far enough into it."""
    found = []
    for bc in backchannels:
        if bc.speaker is reply.speaker or not (
            reply.start_conv_s + s.talk_over_min_offset_s <= bc.start_conv_s < reply.end_conv_s
        ):
            continue
        found.append(
            Label(
                label_id(cid, bc.speaker, LabelKind.REPLY_BACKCHANNEL, bc.start_conv_s),
                LabelKind.REPLY_BACKCHANNEL,
                bc.speaker,
                bc.start_conv_s,
                bc.end_conv_s,
                Rule.BACKCHANNEL_IN_REPLY,
                bc.confidence,
                bc.flags,
                bc.text,
                bc.words,
                bc.gap_fill_words,
                reply_offset_s=_r(bc.start_conv_s - reply.start_conv_s),
                kept_talking_s=_r(reply.end_conv_s - bc.start_conv_s),
            )
        )
    return found


def talk_over(cid: str, labels: list[Label], s: EngineSettings) -> list[Label]:
    """Barge-ins and backchannels during a reply, from the labels of rules 1 to 4."""
    turns = [x for x in labels if x.kind is LabelKind.TURN]
    overlaps = [x for x in labels if x.kind is LabelKind.OVERLAP]
    backchannels = [x for x in labels if x.kind is LabelKind.BACKCHANNEL]
    found: list[Label] = []
    for reply in _replies(turns):
        barge_in = _barge_in(cid, reply, turns, overlaps, s)
        if barge_in is not None:
            found.append(barge_in)
        found.extend(_backchannels_in(cid, reply, backchannels, s))
    return found
