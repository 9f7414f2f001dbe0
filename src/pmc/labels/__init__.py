"""Label stage: the rule engine's turns, pauses, backchannels, overlaps and turn ends; selection.

The engine (``_engine``, gaps filled by ``_gapfill``) labels one conversation; ``_vap`` flags
labels with a voice-activity projection; ``_stage`` labels a workdir's corpus; ``_select`` keeps
the lively conversations; ``_inventory`` counts what was labelled; ``_summaries`` writes the
inventory and the selection beside the labels.
"""

from pmc.labels._engine import label_conversation
from pmc.labels._inventory import (
    Inventory,
    inventory,
    inventory_csv,
    inventory_figure,
    inventory_markdown,
)
from pmc.labels._select import (
    LIVELINESS_CUTOFF,
    SELECTION_SCHEMA_VERSION,
    Selection,
    SelectionRow,
    select,
    selection_csv,
    selection_table_markdown,
)
from pmc.labels._settings import ENGINE_VERSION, EngineSettings
from pmc.labels._stage import (
    SELECTION_FILE,
    LabelRun,
    label_paths,
    labels_dir,
    read_labels,
    run_labels,
)
from pmc.labels._summaries import INVENTORY_FIGURE, run_selection, write_inventory
from pmc.labels._types import (
    LABELS_SCHEMA_VERSION,
    Flag,
    Label,
    LabelKind,
    Labels,
    Rule,
    label_id,
)
from pmc.labels._vap import Projection, Projector, flag_with_projection, load_projector

__all__ = [
    "ENGINE_VERSION",
    "INVENTORY_FIGURE",
    "LABELS_SCHEMA_VERSION",
    "LIVELINESS_CUTOFF",
    "SELECTION_FILE",
    "SELECTION_SCHEMA_VERSION",
    "EngineSettings",
    "Flag",
    "Inventory",
    "Label",
    "LabelKind",
    "LabelRun",
    "Labels",
    "Projection",
    "Projector",
    "Rule",
    "Selection",
    "SelectionRow",
    "flag_with_projection",
    "inventory",
    "inventory_csv",
    "inventory_figure",
    "inventory_markdown",
    "label_conversation",
    "label_id",
    "label_paths",
    "labels_dir",
    "load_projector",
    "read_labels",
    "run_labels",
    "run_selection",
    "select",
    "selection_csv",
    "selection_table_markdown",
    "write_inventory",
]
