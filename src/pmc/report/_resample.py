"""The conversation bootstrap's resamples, computed for all draws at once.

A resample draws conversations with replacement (paper appendix E); a statistic over it is the
statistic over every value of every drawn conversation, repeats included. Drawing the
conversations stays one draw per resample, as before, so a seed gives the draws it always gave;
the statistics are then read from how often each conversation was drawn, without building each
resample's list. A median is found by rank in the values sorted once, and taken as
:func:`numpy.median` takes it (the middle value, or half the sum of the two middle ones), so
every draw is the number the one-resample-at-a-time loop gave, to the bit. For the main table's
2,000 resamples of some 40 metrics that loop was the report's longest step.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

Counts = NDArray[np.int64]
"""How often each conversation was drawn: one row per resample, one column per conversation."""


def draw_counts(rng: np.random.Generator, conversations: int, resamples: int) -> Counts:
    """``resamples`` draws of ``conversations`` conversations with replacement, as counts."""
    picked = [rng.integers(0, conversations, conversations) for _ in range(resamples)]
    if not picked:
        return np.zeros((0, conversations), dtype=np.int64)
    cells = (np.arange(resamples)[:, None] * conversations + np.array(picked)).ravel()
    found = np.bincount(cells, minlength=resamples * conversations)
    return found.reshape(resamples, conversations).astype(np.int64)


def resampled_rates(hits: Sequence[int], totals: Sequence[int], counts: Counts) -> list[float]:
    """Each resample's ``sum(hits) / sum(totals)`` (per-conversation counts), where it has any."""
    drawn_hits = counts @ np.asarray(hits, dtype=np.int64)
    drawn_totals = counts @ np.asarray(totals, dtype=np.int64)
    some = drawn_totals > 0
    return [float(v) for v in drawn_hits[some] / drawn_totals[some]]


def resampled_medians(
    values: Sequence[float], conversation: Sequence[int], counts: Counts
) -> list[float]:
    """Each resample's median of ``values`` (``conversation``: each value's column in counts).

    Resamples that drew no value are left out.
    """
    if not len(values):
        return []
    order = np.argsort(np.asarray(values, dtype=np.float64), kind="stable")
    ordered = np.asarray(values, dtype=np.float64)[order]
    weights = counts[:, np.asarray(conversation, dtype=np.intp)[order]]
    ranks = np.cumsum(weights, axis=1)
    n = ranks[:, -1]
    some = n > 0
    ranks, n = ranks[some], n[some]
    # The 1-based ranks of the two middle values (the same one where n is odd): the first
    # position whose running count reaches a rank holds that rank's value.
    low = (ranks < ((n + 1) // 2)[:, None]).sum(axis=1)
    high = (ranks < (n // 2 + 1)[:, None]).sum(axis=1)
    return [float(v) for v in (ordered[low] + ordered[high]) / 2]
