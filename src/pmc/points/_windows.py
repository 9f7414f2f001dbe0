"""Pause and turn-end candidates as windows a reviewer judges, and what a review leaves of them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pmc.points._candidates import Candidate
from pmc.points._types import PointKind
from pmc.review import Window, WindowKind, read_log, window_reviews


def window_of(point_id: str, kind: PointKind, candidate: Candidate) -> Window:
    """A candidate as a reviewer sees it: its context runs from its turn to the reply's end."""
    c = candidate
    end = c.reply.end_conv_s if c.reply is not None else c.stream_end_conv_s
    return Window(
        window_id=point_id,
        kind=WindowKind(kind.value),
        conversation_id=c.conversation_id,
        speaker=c.user,
        boundary_conv_s=c.boundary_conv_s,
        boundary_end_conv_s=c.boundary_end_conv_s,
        context_start_conv_s=c.turn.start_conv_s,
        context_end_conv_s=max(end, c.boundary_end_conv_s),
        label_id=(c.over or c.label).id,
        label_sha256=(c.over or c.label).content_sha256(),
    )


@dataclass(frozen=True)
class ReviewCut:
    """What a review takes out of a set of windows.

    Attributes:
        rejected: Windows a reviewer currently rejects: never drawn.
        unaccepted: Windows not rejected, but accepted by fewer reviewers than required.
        problems: Log lines that could not be read (each names its file and line).
    """

    rejected: frozenset[str] = frozenset()
    unaccepted: frozenset[str] = frozenset()
    problems: list[str] = field(default_factory=list)


def review_cut(workdir: Path, windows: Iterable[Window], require: int) -> ReviewCut:
    """The windows the review takes out, judged against each window's label as it is now."""
    log = read_log(workdir)
    current = {w.window_id: w.label_sha256 for w in windows}
    reviews = window_reviews(log.entries, current)
    rejected = {w for w, r in reviews.items() if r.rejected}
    accepted = {w: len(r.accepted_by) for w, r in reviews.items()}
    unaccepted = {w for w in current if w not in rejected and accepted.get(w, 0) < require}
    return ReviewCut(frozenset(rejected), frozenset(unaccepted), log.skipped)
