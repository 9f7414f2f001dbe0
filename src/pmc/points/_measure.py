"""The person's own timing at a talk-over point, measured as the harness and scoring measure it.

The labels place a reply's start and end and an overlap's onset by the rule engine's speech
activity, some tens of ms from where the speech gate places them. The harness times a clip from
the system's reply onset as the gate's envelope finds it, and scoring ends the system's talk
where the gate's last interval ends, refined to the sample. So the point's offset and the
person's yield are measured on what the person replays (its reply cut, from where it began on
the stream) by the same rules: replayed as a system, the person is scored exactly as it talked
(docs/architecture.md "Protocol", talk-over points).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pmc.audio import SAMPLE_RATE, FloatArray
from pmc.gate import TALK_QUIET_S, GateParams, OnsetRule, speech_intervals, talk_end
from pmc.labels import Label
from pmc.points._candidates import Candidate
from pmc.points._cuts import to_sample


@dataclass(frozen=True)
class PersonTiming:
    """Where the clip comes after the reply's onset, and how the person's talk ended over it.

    Attributes:
        offset_s: From the reply's gated onset to the clip's onset.
        stop_s: From the clip's onset to the end of the person's talk.
        talk_over_s: How long the person talked over the clip (to the earlier of the two ends).
    """

    offset_s: float
    stop_s: float
    talk_over_s: float


def person_timing(
    reply: FloatArray, reply_at: int, boundary: int, clip_at: int, clip_end: int
) -> PersonTiming | None:
    """The person's timing on the stream clock, or None where there is nothing to time.

    Every argument is a stream sample (``reply_at``: where the reply begins). None where the
    gate finds no reply onset after the boundary before the clip, or no talk under way at the
    clip's onset. The reply onset is the first envelope onset at or after the boundary, as the
    harness finds it on the played track.
    """
    gate = GateParams()
    # The played track goes on in silence after the reply, as a rollout's does: a last interval
    # closes on the window after its speech, even where the reply's cut ends inside that window.
    after = np.zeros(round(2 * TALK_QUIET_S * SAMPLE_RATE), np.float32)
    before = np.zeros(max(0, reply_at), np.float32)
    played = np.concatenate([before, reply.astype(np.float32), after])
    found = speech_intervals(played, gate, SAMPLE_RATE, OnsetRule.ENVELOPE)
    onsets = [round(i.start_s * SAMPLE_RATE) for i in found]
    onset = next((o for o in onsets if o >= boundary), None)
    if onset is None or onset > clip_at:
        return None
    end = talk_end(played, clip_at, gate, SAMPLE_RATE, intervals=found)
    if end is None:
        return None
    return PersonTiming(
        offset_s=round((clip_at - onset) / SAMPLE_RATE, 4),
        stop_s=round((end - clip_at) / SAMPLE_RATE, 4),
        talk_over_s=round((min(end, clip_end) - clip_at) / SAMPLE_RATE, 4),
    )


def talk_over_fields(
    over: Label, reply: FloatArray, stream_start: int, c: Candidate, clip_len: int
) -> dict[str, Any]:
    """A talk-over point's fields: the clip's offset and the person's own timing, measured.

    The labels' own stand where the gate finds no reply to time the clip from.
    """
    assert c.reply is not None
    origin = stream_start / SAMPLE_RATE

    def stream(t_conv_s: float) -> int:  # as the harness places a time on the stream
        return round((t_conv_s - origin) * SAMPLE_RATE)

    clip_at = to_sample(over.start_conv_s) - stream_start  # where the clip's cut begins
    timing = person_timing(
        reply, stream(c.reply.start_conv_s), stream(c.boundary_conv_s), clip_at, clip_at + clip_len
    )
    fields: dict[str, Any] = {
        "inject_conv_s": round(to_sample(over.start_conv_s) / SAMPLE_RATE, 6),
        "inject_offset_s": over.reply_offset_s,
        "inject_text": over.text,
        "person_yield_s": over.yield_s,
        "person_talk_over_s": over.talk_over_s,
        "person_kept_talking_s": over.kept_talking_s,
        "person_next_text": " ".join(c.next_words),
    }
    if timing is None:
        return fields
    fields["inject_offset_s"] = timing.offset_s
    if over.yield_s is not None:
        fields["person_yield_s"] = timing.stop_s
        fields["person_talk_over_s"] = timing.talk_over_s
    if over.kept_talking_s is not None:
        fields["person_kept_talking_s"] = timing.stop_s
    return fields
