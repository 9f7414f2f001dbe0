"""Human labels: a reviewer's re-annotation of a conversation, in the label stage's own schema.

``WORKDIR/review/labels/<reviewer>/<conversation>.json`` is a :class:`pmc.labels.Labels`. It
starts as a copy of the engine's labels and changes one edit at a time; each edit is also a
line of the reviewer's log. An edit names the label it changes by id and content hash, and is
refused when that label is no longer as the reviewer saw it (another tab, a rerun).
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

from pmc import io
from pmc.corpus import Channel
from pmc.errors import PmcError
from pmc.labels import Label, LabelKind, Labels, Rule, label_id, read_labels
from pmc.review._log import review_dir
from pmc.review._types import Decision, check_reviewer

HUMAN_DIR = "labels"
REVIEWER_CONFIDENCE = 1.0
"""A person's label is taken as certain; the engine's confidences describe its own rules."""


class EditConflict(PmcError):
    """An edit made on a label that is no longer as the reviewer saw it."""


def human_labels_dir(workdir: Path, reviewer: str) -> Path:
    """Where one reviewer's re-annotations are."""
    return review_dir(workdir) / HUMAN_DIR / check_reviewer(reviewer)


def human_reviewers(workdir: Path) -> list[str]:
    """The reviewers who re-annotated at least one conversation, sorted."""
    folder = review_dir(workdir) / HUMAN_DIR
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and any(p.glob("*.json")))


def human_labels_path(workdir: Path, reviewer: str, conversation_id: str) -> Path:
    """One reviewer's labels of one conversation."""
    return human_labels_dir(workdir, reviewer) / f"{conversation_id}.json"


def read_human_labels(workdir: Path, reviewer: str, conversation_id: str) -> Labels | None:
    """A reviewer's labels of a conversation, or None when they have not begun it."""
    path = human_labels_path(workdir, reviewer, conversation_id)
    return read_labels(path) if path.exists() else None


def all_human_labels(workdir: Path, reviewer: str) -> dict[str, Labels]:
    """Every conversation a reviewer re-annotated, by id."""
    folder = human_labels_dir(workdir, reviewer)
    found = sorted(folder.glob("*.json")) if folder.is_dir() else []
    return {p.stem: read_labels(p) for p in found}


def write_human_labels(workdir: Path, reviewer: str, labels: Labels) -> Path:
    """Store a reviewer's labels of one conversation (atomically)."""
    path = human_labels_path(workdir, reviewer, labels.conversation_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    io.write_json(path, labels.to_dict())
    return path


def labels_sha256(labels: Labels) -> str:
    """A hash of a conversation's labels (not their settings)."""
    text = io.dumps([label.to_dict() for label in labels.labels])
    return hashlib.sha256(text.encode()).hexdigest()


def start_from(engine: Labels, reviewer: str) -> Labels:
    """A reviewer's first copy of the engine's labels, recording which labels it began from."""
    settings = {"reviewer": reviewer, "engine_labels_sha256": labels_sha256(engine)}
    return replace(engine, settings=settings)


def human_label(
    conversation_id: str,
    kind: LabelKind,
    speaker: Channel | None,
    start_conv_s: float,
    end_conv_s: float,
    text: str = "",
) -> Label:
    """A label placed by a person; an end of turn is an instant at ``start_conv_s``."""
    start = round(start_conv_s, 3)
    end = start if kind is LabelKind.END_OF_TURN else round(end_conv_s, 3)
    if end < start:
        raise PmcError(f"a label cannot end ({end:.3f} s) before it starts ({start:.3f} s)")
    return Label(
        id=label_id(conversation_id, speaker, kind, start),
        kind=kind,
        speaker=speaker,
        start_conv_s=start,
        end_conv_s=end,
        rule=Rule.REVIEWER,
        confidence=REVIEWER_CONFIDENCE,
        text=text,
        words=len(text.split()),
    )


def apply_edit(
    labels: Labels, decision: Decision, target_id: str, seen_sha256: str, after: Label | None
) -> Labels:
    """The labels after one edit.

    Args:
        labels: The reviewer's labels as they are.
        decision: Move, relabel, add or delete.
        target_id: The label edited (ignored for an addition).
        seen_sha256: Its content hash as the reviewer saw it ("" for an addition).
        after: The label it becomes (None for a deletion).

    Raises:
        EditConflict: If the label is gone or has changed since the reviewer saw it, or an
            added label would take the id of one already there.
    """
    by_id = {label.id: label for label in labels.labels}
    if decision is Decision.ADD:
        if after is None:
            raise ValueError("an addition needs its label")
        if after.id in by_id:
            raise EditConflict(f"{labels.conversation_id}: a label {after.id} is already there")
        kept = list(labels.labels)
    else:
        before = by_id.get(target_id)
        if before is None or before.content_sha256() != seen_sha256:
            raise EditConflict(
                f"{labels.conversation_id}: label {target_id} changed since it was shown; "
                "reload the conversation"
            )
        kept = [label for label in labels.labels if label.id != target_id]
        if after is not None and any(label.id == after.id for label in kept):
            raise EditConflict(f"{labels.conversation_id}: a label {after.id} is already there")
    if after is not None:
        kept.append(after)
    kept.sort(key=lambda x: (x.start_conv_s, x.end_conv_s, x.kind.value, x.id))
    return replace(labels, labels=tuple(kept))
