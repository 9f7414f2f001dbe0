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
5. (Ours, docs/labels.md.) Inside a reply, the listener's turn that starts over it and holds the
   floor after it is a barge-in; the listener's backchannel is a backchannel during a reply.

The engine is symmetric in the two speakers by construction, and its ids come from content.
Rule 1 is ``_runs``, rules 2 and 3 are ``_rules``, rule 4 is ``_emit``, rule 5 is ``_talkover``;
the parameters are ``_settings``.
"""

from __future__ import annotations

from pmc.corpus import Channel, Conversation
from pmc.labels._emit import overlaps, speaker_labels
from pmc.labels._rules import decide_offsets, inside_own_turns, mark_backchannels
from pmc.labels._runs import Role, RunIndex, speech_runs
from pmc.labels._settings import ENGINE_VERSION, EngineSettings
from pmc.labels._talkover import talk_over
from pmc.labels._types import Label, Labels


def label_conversation(
    conversation: Conversation, settings: EngineSettings | None = None
) -> Labels:
    """Label one conversation with the rule engine (paper section 3.2)."""
    s = settings or EngineSettings()
    runs = {c: speech_runs(conversation, c, s.bridge_s) for c in Channel}
    index = {c: RunIndex(runs[c]) for c in Channel}
    other = {Channel.A: Channel.B, Channel.B: Channel.A}
    for c in Channel:
        mark_backchannels(runs[c], index[c], index[other[c]], s)
    # A backchannel or failed take can end up inside its own speaker's turn (when the floor it
    # answered turns out to be a failed take itself); it is then pinned as part of that turn and
    # the offsets are decided again. Each pass pins at least one more run, so the loop ends.
    decide_offsets(runs, index, s)
    while inside := [r for c in Channel for r in inside_own_turns(runs[c])]:
        for run in inside:
            run.role, run.pinned = Role.SPEECH, True
        decide_offsets(runs, index, s)
    cid = conversation.conversation_id
    labels: list[Label] = []
    for c in Channel:
        labels.extend(speaker_labels(cid, runs[c], s))
    labels.extend(overlaps(cid, runs[Channel.A], runs[Channel.B]))
    labels.extend(talk_over(cid, labels, s))
    labels.sort(key=lambda x: (x.start_conv_s, x.kind.value, x.speaker or "", x.id))
    return Labels(
        conversation_id=cid,
        duration_s=conversation.duration_s,
        labels=tuple(labels),
        settings={"engine_version": ENGINE_VERSION, "engine": s.to_dict()},
    )
