"""Candidate pause, turn-end and talk-over points from the labels, with the label-only filters.

The filters of pauses and turn ends are the paper's (appendix A); a talk-over point is a turn-end
candidate whose reply the other speaker talked over (the labels' rule 5, docs/labels.md).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pmc.corpus import Channel, Conversation, Word
from pmc.labels import Flag, Label, LabelKind, Labels
from pmc.points._types import PointKind

PAUSE_MIN_S = 0.6
"""A pause point needs a labelled pause of at least 600 ms (paper appendix A)."""
TURN_BEFORE_PAUSE_MIN_S = 1.0
"""... and at least 1 s of the speaker's turn before it (appendix A)."""
TURN_MIN_S = 1.0
"""A turn-end point needs a user turn of at least 1 s (appendix A) ..."""
TURN_MIN_WORDS = 3
"""... and three words (appendix A)."""
REPLY_MAX_GAP_S = 3.0
"""The reply starts within 3 s of the turn end (appendix A) ..."""
REPLY_MIN_WORDS = 5
"""... and has at least five words (appendix A)."""
CLIP_MAX_S = 10.0
"""A barge-in's clip is the person's turn from its onset, at most 10 s: longer than the 2 s
window and 1 s quiet that decide a yield (docs/architecture.md "Metrics"), long enough to hold
what the person went on to say."""
OFFSET_MATCH_S = 0.001
"""A rule-5 label belongs to a turn end whose reply starts where the label says (to the ms its
times are rounded to)."""
RESUMPTION_MAX_S = 5.0
"""The live stream of a pause point runs to the end of the resumed speech, at most 5 s after
the pause (docs/architecture.md "Protocol")."""


@dataclass(frozen=True)
class Candidate:
    """A boundary that passed the label-only filters.

    Attributes:
        kind: Pause or turn end.
        conversation_id: Where it is.
        user: The active speaker.
        turn: The active turn.
        boundary_conv_s: Pause start, or turn end.
        boundary_end_conv_s: Pause end (the speaker resumes), or the turn end again.
        stream_end_conv_s: End of the live audio: the end of the resumed speech (pause), or the
            turn end.
        reply: The other speaker's reply turn (turn end only).
        words_before: The active speaker's words in the turn before the boundary.
        label: The label a reviewer judges at this boundary: the pause, or the turn that ends.
    """

    kind: PointKind
    conversation_id: str
    user: Channel
    turn: Label
    boundary_conv_s: float
    boundary_end_conv_s: float
    stream_end_conv_s: float
    reply: Label | None
    words_before: tuple[str, ...]
    label: Label
    over: Label | None = None
    """Talk-over kinds: the rule-5 label of the person's talk over the reply."""
    clip_end_conv_s: float | None = None
    """Talk-over kinds: where the person's clip ends (the barge-in turn's or backchannel's end)."""
    next_words: tuple[str, ...] = ()
    """Talk-over kinds: what the replier said next, after the clip (:func:`next_words`)."""


def all_words(conversation: Conversation, labels: Labels, channel: Channel) -> list[Word]:
    """A speaker's words: the source's own and those gap fill added, in time order."""
    words = [*conversation.speaker(channel).words, *labels.filled_words.get(channel, ())]
    return sorted(words, key=lambda w: (w.start_conv_s, w.end_conv_s))


def _turn_of(turns: list[Label], t: float) -> Label | None:
    return next((x for x in turns if x.start_conv_s <= t <= x.end_conv_s), None)


def pause_candidates(conversation: Conversation, labels: Labels) -> tuple[int, list[Candidate]]:
    """All labelled pauses (the count) and those passing the label-only filters."""
    cid = conversation.conversation_id
    found: list[Candidate] = []
    pauses = labels.of(LabelKind.PAUSE)
    for pause in pauses:
        user = pause.speaker
        if user is None:
            continue
        turns = labels.of(LabelKind.TURN, user)
        turn = _turn_of(turns, pause.start_conv_s)
        if turn is None or pause.duration_s < PAUSE_MIN_S:
            continue
        if pause.start_conv_s - turn.start_conv_s < TURN_BEFORE_PAUSE_MIN_S:
            continue
        listener = all_words(conversation, labels, user.other)
        if any(
            w.start_conv_s < pause.end_conv_s and w.end_conv_s > pause.start_conv_s
            for w in listener
        ):
            continue
        later = [
            p.start_conv_s
            for p in pauses
            if p.speaker is user and p.start_conv_s >= pause.end_conv_s
        ]
        resumed_until = min([turn.end_conv_s, *later])
        own = all_words(conversation, labels, user)
        before = tuple(
            w.text for w in own if turn.start_conv_s <= w.start_conv_s < pause.start_conv_s
        )
        found.append(
            Candidate(
                PointKind.PAUSE,
                cid,
                user,
                turn,
                pause.start_conv_s,
                pause.end_conv_s,
                min(resumed_until, pause.end_conv_s + RESUMPTION_MAX_S),
                None,
                before,
                pause,
            )
        )
    return len(pauses), found


def turn_end_candidates(
    conversation: Conversation, labels: Labels, reply_min_words: int = REPLY_MIN_WORDS
) -> tuple[int, list[Candidate]]:
    """All turn ends (the count) and those passing the label-only filters.

    ``reply_min_words``: the reply's least words (the talk-over kinds ask for fewer: a reply cut
    short by a barge-in is what they are about).
    """
    cid = conversation.conversation_id
    found: list[Candidate] = []
    turns = labels.of(LabelKind.TURN)
    for turn in turns:
        user = turn.speaker
        if user is None or turn.duration_s < TURN_MIN_S or turn.words < TURN_MIN_WORDS:
            continue
        reply = next(
            (
                r
                for r in turns
                if r.speaker is user.other
                and r.start_conv_s > turn.start_conv_s
                and r.end_conv_s > turn.end_conv_s
            ),
            None,
        )
        if reply is None or reply.start_conv_s - turn.end_conv_s > REPLY_MAX_GAP_S:
            continue
        if reply.words < reply_min_words:
            continue
        found.append(
            Candidate(
                PointKind.TURN_END,
                cid,
                user,
                turn,
                turn.end_conv_s,
                turn.end_conv_s,
                turn.end_conv_s,
                reply,
                tuple(turn.text.split()),
                turn,
            )
        )
    return len(turns), found


TALK_OVER_KINDS = {
    LabelKind.BARGE_IN: PointKind.BARGE_IN,
    LabelKind.REPLY_BACKCHANNEL: PointKind.BACKCHANNEL,
}
"""The rule-5 labels and the point kinds made of them."""


TALK_OVER_REPLY_MIN_WORDS = 2
"""A talk-over point's reply needs two words before the person came in, not the turn end's five
(appendix A): the person's reply there is the reference yield, not a text to compare."""


def talk_over_candidates(
    conversation: Conversation, labels: Labels
) -> dict[PointKind, tuple[int, list[Candidate]]]:
    """Barge-in and backchannel candidates: a filtered turn end whose reply was talked over.

    For each kind, all labels of it (the count) and the candidates. A barge-in flagged as a
    terminal overlap (the replier was finishing anyway) is no barge-in to play.
    """
    turn_ends = turn_end_candidates(conversation, labels, TALK_OVER_REPLY_MIN_WORDS)[1]
    found: dict[PointKind, tuple[int, list[Candidate]]] = {}
    turns = labels.of(LabelKind.TURN)
    for label_kind, kind in TALK_OVER_KINDS.items():
        over_labels = labels.of(label_kind)
        kept: list[Candidate] = []
        for over in over_labels:
            if over.reply_offset_s is None or Flag.TERMINAL_OVERLAP in over.flags:
                continue
            reply_start = over.start_conv_s - over.reply_offset_s
            end = next(
                (
                    c
                    for c in turn_ends
                    if c.user is over.speaker
                    and c.reply is not None
                    and abs(c.reply.start_conv_s - reply_start) <= OFFSET_MATCH_S
                ),
                None,
            )
            if end is None:
                continue
            clip_end = over.end_conv_s
            if kind is PointKind.BARGE_IN:
                own = next(
                    (
                        t
                        for t in turns
                        if t.speaker is over.speaker and t.start_conv_s == over.start_conv_s
                    ),
                    None,
                )
                clip_end = own.end_conv_s if own is not None else over.end_conv_s
            clip_end = min(clip_end, over.start_conv_s + CLIP_MAX_S)
            after = next_words(conversation, turns, end.user.other, clip_end)
            kept.append(
                replace(end, kind=kind, over=over, clip_end_conv_s=clip_end, next_words=after)
            )
        found[kind] = (len(over_labels), kept)
    return found


def next_words(
    conversation: Conversation, turns: list[Label], replier: Channel, after_conv_s: float
) -> tuple[str, ...]:
    """The replier's words after ``after_conv_s`` to the end of its turn then under way or next.

    After a backchannel that is the rest of the reply it went on with; after a barge-in, the
    turn it took next (it had given up the floor): the person's words that a system speaking
    after the clip is compared with, as a reply is at a turn end.
    """
    turn = next(
        (t for t in turns if t.speaker is replier and t.end_conv_s > after_conv_s),
        None,
    )
    if turn is None:
        return ()
    return tuple(
        w.text
        for w in conversation.speaker(replier).words
        if after_conv_s <= w.start_conv_s < turn.end_conv_s
    )
