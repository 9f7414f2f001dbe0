"""The demo corpus's ground truth as a reviewer: its labels, and its decision on each window.

The demo's scripts place every word, so their ground truth is what a perfect annotator would
mark. Loaded as the reviewer ``truth``, it exercises the whole comparison offline.
"""

from __future__ import annotations

from pmc.demo import GroundTruth, GroundTruthKind
from pmc.labels import LabelKind, Labels
from pmc.review._human import human_label
from pmc.review._types import Decision, Reason, Window, WindowKind

TRUTH_REVIEWER = "truth"
BOUNDARY_TOLERANCE_S = 0.25
"""A window's boundary agrees with the truth within 250 ms (paper appendix E's coarser bound)."""

_KINDS = {
    GroundTruthKind.TURN: LabelKind.TURN,
    GroundTruthKind.PAUSE: LabelKind.PAUSE,
    GroundTruthKind.TURN_END: LabelKind.END_OF_TURN,
    GroundTruthKind.BACKCHANNEL: LabelKind.BACKCHANNEL,
    GroundTruthKind.FAILED_TAKE: LabelKind.FAILED_TAKE,
    GroundTruthKind.OVERLAP: LabelKind.OVERLAP,
    GroundTruthKind.BARGE_IN: LabelKind.BARGE_IN,
}
"""Every ground-truth kind but the recall fact, which is not a label."""


def truth_labels(truth: GroundTruth, duration_s: float) -> Labels:
    """The ground truth in the label stage's schema."""
    cid = truth.conversation_id
    labels = [
        human_label(cid, _KINDS[e.kind], e.speaker, e.start_conv_s, e.end_conv_s, e.text)
        for e in truth.events
        if e.kind in _KINDS
    ]
    labels.sort(key=lambda x: (x.start_conv_s, x.end_conv_s, x.kind.value, x.id))
    settings = {"reviewer": TRUTH_REVIEWER, "source": "demo ground truth"}
    return Labels(cid, duration_s, tuple(labels), settings)


def _overlaps(start: float, end: float, a: float, b: float) -> bool:
    return a < end and b > start


def truth_decision(window: Window, truth: Labels) -> tuple[Decision, Reason | None, str]:
    """What the ground truth says of a window: accept, or reject with a reason and a note."""
    who, b, b_end = window.speaker, window.boundary_conv_s, window.boundary_end_conv_s
    if window.kind is WindowKind.PAUSE:
        listener = [
            x
            for k in (LabelKind.BACKCHANNEL, LabelKind.FAILED_TAKE, LabelKind.TURN)
            for x in truth.of(k)
            if x.speaker is not who and _overlaps(b, b_end, x.start_conv_s, x.end_conv_s)
        ]
        if listener:
            return Decision.REJECT, Reason.LISTENER_SPOKE, f"the truth has {listener[0].id} here"
        pauses = [
            x
            for x in truth.of(LabelKind.PAUSE, who)
            if _overlaps(b, b_end, x.start_conv_s, x.end_conv_s)
        ]
        if not pauses:
            return Decision.REJECT, Reason.NOT_A_PAUSE, "no pause of this speaker in the truth"
        if min(abs(x.start_conv_s - b) for x in pauses) > BOUNDARY_TOLERANCE_S:
            return Decision.REJECT, Reason.BOUNDARY_MISPLACED, "the truth's pause starts elsewhere"
        return Decision.ACCEPT, None, ""
    ends = [x.start_conv_s for x in truth.of(LabelKind.END_OF_TURN, who)]
    nearest = min((abs(t - b) for t in ends), default=None)
    if nearest is not None and nearest <= BOUNDARY_TOLERANCE_S:
        return Decision.ACCEPT, None, ""
    pauses = truth.of(LabelKind.PAUSE, who)
    if any(x.start_conv_s - BOUNDARY_TOLERANCE_S <= b <= x.end_conv_s for x in pauses):
        return Decision.REJECT, Reason.OTHER, "the truth has a pause here, not a turn end"
    return Decision.REJECT, Reason.BOUNDARY_MISPLACED, "no turn end of this speaker within 250 ms"
