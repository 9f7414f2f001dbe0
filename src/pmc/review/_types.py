"""What a review records: windows to judge, and every decision a reviewer made.

A decision names the label it judged by id and by content hash, so a label changed after the
decision (the engine rerun, a setting moved) shows the decision as stale instead of applying it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pmc.corpus import Channel
from pmc.errors import PmcError
from pmc.io import schema_version

ENTRY_SCHEMA_VERSION = 1
WINDOW_SCHEMA_VERSION = 1
REVIEWER_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""A reviewer's name is a file name: letters, digits, ``_.-``, at most 64 characters."""


class WindowKind(StrEnum):
    """The kinds of boundary a window shows (the point kinds of the same names).

    A barge-in or backchannel window shows the turn end whose reply the person talked over.
    """

    PAUSE = "pause"
    TURN_END = "turn_end"
    BARGE_IN = "barge_in"
    BACKCHANNEL = "backchannel"


class Target(StrEnum):
    """What a decision is about."""

    WINDOW = "window"
    """A pause or turn-end window, accepted or rejected as a whole."""
    LABEL = "label"
    """One label of a conversation, re-annotated."""


class Decision(StrEnum):
    """What a reviewer decided."""

    ACCEPT = "accept"
    REJECT = "reject"
    MOVE = "move"
    """A label's start or end moved."""
    RELABEL = "relabel"
    """A label's kind changed."""
    ADD = "add"
    DELETE = "delete"


WINDOW_DECISIONS = (Decision.ACCEPT, Decision.REJECT)
EDITS = (Decision.MOVE, Decision.RELABEL, Decision.ADD, Decision.DELETE)


class Reason(StrEnum):
    """Why a window was rejected: the fixed list the tool offers."""

    NOT_A_PAUSE = "not a pause"
    LISTENER_SPOKE = "listener spoke"
    BOUNDARY_MISPLACED = "boundary misplaced"
    UNCLEAR_AUDIO = "unclear audio"
    OTHER = "other"


def check_reviewer(name: str) -> str:
    """The name, if it can name a log file; otherwise a :class:`PmcError` that says why."""
    if not REVIEWER_PATTERN.fullmatch(name):
        raise PmcError(
            f"reviewer name {name!r}: use 1 to 64 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit"
        )
    return name


@dataclass(frozen=True)
class Window:
    """A pause or turn-end boundary as a reviewer sees it.

    Attributes:
        window_id: The point id the boundary has (or would have) in the points stage.
        kind: Pause or turn end.
        conversation_id: Where it is.
        speaker: The person whose turn it is (the left channel of the player).
        boundary_conv_s: The pause's start, or the turn's end.
        boundary_end_conv_s: The pause's end; the turn end again for a turn end.
        context_start_conv_s: Where its context starts: the active turn's start.
        context_end_conv_s: Where it ends: the resumed speech, or the end of the reply.
        label_id: The label it judges: the pause, or the turn that ends.
        label_sha256: That label's content hash when the window was made.
        drawn: Whether the points stage drew it (False for a candidate left out by the draw).
    """

    window_id: str
    kind: WindowKind
    conversation_id: str
    speaker: Channel
    boundary_conv_s: float
    boundary_end_conv_s: float
    context_start_conv_s: float
    context_end_conv_s: float
    label_id: str
    label_sha256: str
    drawn: bool = False
    schema_version: int = WINDOW_SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form, with the schema version."""
        return {
            "schema_version": self.schema_version,
            "window_id": self.window_id,
            "kind": self.kind.value,
            "conversation_id": self.conversation_id,
            "speaker": self.speaker.value,
            "boundary_conv_s": self.boundary_conv_s,
            "boundary_end_conv_s": self.boundary_end_conv_s,
            "context_start_conv_s": self.context_start_conv_s,
            "context_end_conv_s": self.context_end_conv_s,
            "label_id": self.label_id,
            "label_sha256": self.label_sha256,
            "drawn": self.drawn,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Window:
        """Inverse of :meth:`to_dict`; refuses a schema version it does not know."""
        return cls(
            window_id=str(data["window_id"]),
            kind=WindowKind(data["kind"]),
            conversation_id=str(data["conversation_id"]),
            speaker=Channel(data["speaker"]),
            boundary_conv_s=float(data["boundary_conv_s"]),
            boundary_end_conv_s=float(data["boundary_end_conv_s"]),
            context_start_conv_s=float(data["context_start_conv_s"]),
            context_end_conv_s=float(data["context_end_conv_s"]),
            label_id=str(data["label_id"]),
            label_sha256=str(data["label_sha256"]),
            drawn=bool(data.get("drawn", False)),
            schema_version=schema_version(data, WINDOW_SCHEMA_VERSION, "window"),
        )


@dataclass(frozen=True)
class Entry:
    """One line of a reviewer's log: a decision on a window, or one edit of a label.

    Attributes:
        reviewer: Who decided.
        target: A window or a label.
        target_id: The window id, or the label id.
        conversation_id: The conversation it belongs to.
        label_id: The label judged (a window's label; for an edit, the label before it, or the
            new label's id for an addition).
        label_sha256: That label's content hash when judged ("" for an addition).
        decision: What was decided.
        reason: Why a window was rejected (None otherwise).
        note: Free text.
        at_utc: When, as ISO 8601 UTC on the wall clock of the reviewer's machine.
        label: For an edit, the label after it (None for a deletion and for window decisions).
    """

    reviewer: str
    target: Target
    target_id: str
    conversation_id: str
    label_id: str
    label_sha256: str
    decision: Decision
    at_utc: str
    reason: Reason | None = None
    note: str = ""
    label: dict[str, Any] | None = None
    schema_version: int = ENTRY_SCHEMA_VERSION

    def __post_init__(self) -> None:
        if (self.target is Target.WINDOW) != (self.decision in WINDOW_DECISIONS):
            raise ValueError(f"a {self.target.value} cannot be given {self.decision.value!r}")
        if (self.reason is not None) != (self.decision is Decision.REJECT):
            raise ValueError("a reason goes with a rejection, and every rejection has one")

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form, with the schema version."""
        return {
            "schema_version": self.schema_version,
            "reviewer": self.reviewer,
            "target": self.target.value,
            "target_id": self.target_id,
            "conversation_id": self.conversation_id,
            "label_id": self.label_id,
            "label_sha256": self.label_sha256,
            "decision": self.decision.value,
            "reason": None if self.reason is None else self.reason.value,
            "note": self.note,
            "at_utc": self.at_utc,
            "label": self.label,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Entry:
        """Inverse of :meth:`to_dict`; refuses a schema version it does not know."""
        reason = data.get("reason")
        label = data.get("label")
        return cls(
            reviewer=str(data["reviewer"]),
            target=Target(data["target"]),
            target_id=str(data["target_id"]),
            conversation_id=str(data["conversation_id"]),
            label_id=str(data["label_id"]),
            label_sha256=str(data["label_sha256"]),
            decision=Decision(data["decision"]),
            at_utc=str(data["at_utc"]),
            reason=None if reason is None else Reason(reason),
            note=str(data.get("note", "")),
            label=dict(label) if isinstance(label, dict) else None,
            schema_version=schema_version(data, ENTRY_SCHEMA_VERSION, "review log entry"),
        )


@dataclass(frozen=True)
class WindowReview:
    """Every reviewer's standing decision on one window.

    Attributes:
        accepted_by: Reviewers whose latest decision accepts it, on the label as it is now.
        rejected_by: Reviewers whose latest decision rejects it, with their reasons.
        stale_by: Reviewers whose latest decision judged a label that has changed since; it
            counts for nothing until they decide again.
    """

    accepted_by: tuple[str, ...] = ()
    rejected_by: tuple[tuple[str, Reason], ...] = ()
    stale_by: tuple[str, ...] = field(default=())

    @property
    def rejected(self) -> bool:
        """Whether any reviewer rejects it now."""
        return bool(self.rejected_by)
