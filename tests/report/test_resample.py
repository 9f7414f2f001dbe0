"""The bootstrap's statistics for all resamples at once equal the one-resample-at-a-time loop's."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pmc.report._resample import draw_counts, resampled_medians, resampled_rates

# Values on a coarse grid, so that ties (and medians of two equal middles) come up often.
VALUES = st.lists(
    st.lists(st.integers(-40, 40).map(lambda v: v / 8), max_size=6), min_size=1, max_size=7
)


def _loop_draws(groups: list[list[float]], seed: int, resamples: int) -> list[list[float]]:
    """Each resample's values as the report built them before: drawn conversations in order."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(resamples):
        picked = rng.integers(0, len(groups), len(groups))
        out.append([v for i in picked for v in groups[i]])
    return out


@settings(max_examples=60, deadline=None)
@given(groups=VALUES, seed=st.integers(0, 2**32 - 1))
def test_medians_are_numpys_to_the_bit(groups: list[list[float]], seed: int) -> None:
    counts = draw_counts(np.random.default_rng(seed), len(groups), 50)
    where = [i for i, g in enumerate(groups) for _ in g]
    found = resampled_medians([v for g in groups for v in g], where, counts)
    expected = [float(np.median(s)) for s in _loop_draws(groups, seed, 50) if s]
    assert [v.hex() for v in found] == [v.hex() for v in expected]


@settings(max_examples=60, deadline=None)
@given(
    groups=st.lists(st.lists(st.booleans(), max_size=5), min_size=1, max_size=7),
    seed=st.integers(0, 2**32 - 1),
)
def test_rates_are_the_loops_to_the_bit(groups: list[list[bool]], seed: int) -> None:
    counts = draw_counts(np.random.default_rng(seed), len(groups), 50)
    found = resampled_rates([sum(g) for g in groups], [len(g) for g in groups], counts)
    expected = [
        sum(s) / len(s) for s in _loop_draws([list(map(float, g)) for g in groups], seed, 50) if s
    ]
    assert [v.hex() for v in found] == [v.hex() for v in expected]


def test_counts_are_the_draws_the_seed_always_gave() -> None:
    rng = np.random.default_rng(7)
    picks = [rng.integers(0, 4, 4) for _ in range(3)]
    counts = draw_counts(np.random.default_rng(7), 4, 3)
    assert counts.tolist() == [np.bincount(p, minlength=4).tolist() for p in picks]
    assert (counts.sum(axis=1) == 4).all()


def test_a_median_over_an_even_count_is_half_the_two_middles() -> None:
    counts = np.array([[1, 1], [2, 0], [0, 1]], dtype=np.int64)
    # values 1.0 (first conversation) and 4.0, 6.0 (second)
    found = resampled_medians([1.0, 4.0, 6.0], [0, 1, 1], counts)
    assert found == [4.0, 1.0, 5.0]
