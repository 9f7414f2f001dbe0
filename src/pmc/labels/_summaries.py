"""What the label stage writes beside the labels: the inventory and the liveliness selection.

``labels/inventory.{json,md,csv,png}`` count and draw what was labelled;
``labels/selection.{json,md,csv}`` rank the conversations by liveliness (paper section 3.1).
"""

from __future__ import annotations

from pathlib import Path

from pmc import io
from pmc.labels._inventory import (
    Inventory,
    inventory,
    inventory_csv,
    inventory_figure,
    inventory_markdown,
)
from pmc.labels._select import (
    LIVELINESS_CUTOFF,
    Selection,
    select,
    selection_csv,
    selection_table_markdown,
)
from pmc.labels._stage import INVENTORY_FILE, SELECTION_FILE, label_paths, labels_dir, read_labels

INVENTORY_FIGURE = "inventory.png"


def write_inventory(workdir: Path) -> Inventory:
    """Count every stored label of ``workdir`` and write the inventory beside them."""
    labels = [read_labels(p) for p in label_paths(workdir)]
    found = inventory(labels)
    folder = labels_dir(workdir)
    io.write_json(folder / INVENTORY_FILE, found.to_dict())
    io.write_text(folder / "inventory.md", inventory_markdown(found))
    io.write_text(folder / "inventory.csv", inventory_csv(found))
    inventory_figure(labels, folder / INVENTORY_FIGURE)
    return found


def run_selection(workdir: Path, cutoff: float = LIVELINESS_CUTOFF) -> Selection:
    """Select the lively conversations of ``workdir`` and write the selection beside the labels."""
    selection = select([read_labels(p) for p in label_paths(workdir)], cutoff)
    folder = labels_dir(workdir)
    io.write_json(folder / SELECTION_FILE, selection.to_dict())
    io.write_text(folder / "selection.md", selection_table_markdown(selection))
    io.write_text(folder / "selection.csv", selection_csv(selection))
    return selection
