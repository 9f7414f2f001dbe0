"""Label stage: the rule engine's turns, pauses, backchannels, overlaps and turn ends; selection."""

from pmc.labels._engine import ENGINE_VERSION, EngineSettings, label_conversation
from pmc.labels._types import (
    LABELS_SCHEMA_VERSION,
    Flag,
    Label,
    LabelKind,
    Labels,
    Rule,
    label_id,
)
from pmc.labels._vap import Projection, Projector, flag_with_projection

__all__ = [
    "ENGINE_VERSION",
    "LABELS_SCHEMA_VERSION",
    "EngineSettings",
    "Flag",
    "Label",
    "LabelKind",
    "Labels",
    "Projection",
    "Projector",
    "Rule",
    "flag_with_projection",
    "label_conversation",
    "label_id",
]
