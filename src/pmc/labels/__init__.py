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

__all__ = [
    "ENGINE_VERSION",
    "LABELS_SCHEMA_VERSION",
    "EngineSettings",
    "Flag",
    "Label",
    "LabelKind",
    "Labels",
    "Rule",
    "label_conversation",
    "label_id",
]
