"""Where every window stands: each reviewer's latest decision, checked against the label now.

A reviewer may change their mind: only their latest decision on a window counts. A decision
made on a label that has changed since is stale: it is shown, never applied.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pmc.review._types import Decision, Entry, Reason, Target, WindowReview


def latest_window_decisions(entries: Iterable[Entry]) -> dict[tuple[str, str], Entry]:
    """Each (reviewer, window id)'s latest decision, from entries in the order written."""
    latest: dict[tuple[str, str], Entry] = {}
    for entry in entries:
        if entry.target is Target.WINDOW:
            latest[(entry.reviewer, entry.target_id)] = entry
    return latest


def is_stale(entry: Entry, current_sha256: str | None) -> bool:
    """Whether the label a decision judged has changed (or gone) since."""
    return current_sha256 is None or entry.label_sha256 != current_sha256


def window_reviews(entries: Iterable[Entry], current: Mapping[str, str]) -> dict[str, WindowReview]:
    """Every reviewed window's standing, by window id.

    Args:
        entries: Decisions, in the order written.
        current: Each window's label content hash as the labels are now; a window missing here
            has lost its label, and its decisions are stale.
    """
    accepted: dict[str, list[str]] = {}
    rejected: dict[str, list[tuple[str, Reason]]] = {}
    stale: dict[str, list[str]] = {}
    for (reviewer, window_id), entry in sorted(latest_window_decisions(entries).items()):
        if is_stale(entry, current.get(window_id)):
            stale.setdefault(window_id, []).append(reviewer)
        elif entry.decision is Decision.ACCEPT:
            accepted.setdefault(window_id, []).append(reviewer)
        elif entry.reason is not None:
            rejected.setdefault(window_id, []).append((reviewer, entry.reason))
    return {
        w: WindowReview(
            tuple(accepted.get(w, ())), tuple(rejected.get(w, ())), tuple(stale.get(w, ()))
        )
        for w in sorted({*accepted, *rejected, *stale})
    }
