"""Builders of hand-made labels for tests of what reads labels (selection, inventory, points)."""

from __future__ import annotations

from typing import Any

from pmc.corpus import Channel
from pmc.labels import Label, LabelKind, Rule, label_id

DEFAULT_RULES = {
    LabelKind.TURN: Rule.TURN_SPAN,
    LabelKind.PAUSE: Rule.PAUSE_SAME_SPEAKER_RESUMES,
    LabelKind.END_OF_TURN: Rule.EOT_OTHER_SPEAKER_STARTS,
    LabelKind.BACKCHANNEL: Rule.BACKCHANNEL_SHORT_SEGMENT,
    LabelKind.FAILED_TAKE: Rule.FAILED_TAKE_YIELDED,
    LabelKind.OVERLAP: Rule.OVERLAP_BOTH_VOICED,
    LabelKind.BARGE_IN: Rule.BARGE_IN_REPLIER_YIELDS,
    LabelKind.REPLY_BACKCHANNEL: Rule.BACKCHANNEL_IN_REPLY,
}


def make_label(
    conversation_id: str,
    kind: LabelKind,
    speaker: Channel | None,
    start: float,
    end: float | None = None,
    **fields: Any,
) -> Label:
    """A label with its content-derived id, the usual rule for its kind and confidence 1.

    ``end`` defaults to ``start`` (an instant, as an end of turn is); any other
    :class:`~pmc.labels.Label` field can be given by keyword.
    """
    return Label(
        label_id(conversation_id, speaker, kind, start),
        kind,
        speaker,
        start,
        start if end is None else end,
        fields.pop("rule", DEFAULT_RULES[kind]),
        fields.pop("confidence", 1.0),
        **fields,
    )
