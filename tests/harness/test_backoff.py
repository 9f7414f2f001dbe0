"""The backoff before retrying a passing failure: exponential, capped, jittered by seed."""

import random

import pytest

from pmc.harness import Backoff


def test_waits_double_from_one_second_up_to_thirty_times_a_jitter_of_one_half_to_one() -> None:
    backoff = Backoff()
    for seed in range(50):
        for retry in range(1, 12):
            nominal = min(30.0, 2.0 ** (retry - 1))
            wait = backoff.wait_s(retry, seed)
            assert 0.5 * nominal <= wait <= nominal, (seed, retry, wait)
    # The jitter is the rollout's own: seed + retry, so a rerun waits the same.
    factor = random.Random(1234 + 3).uniform(0.5, 1.0)
    assert backoff.wait_s(3, 1234) == pytest.approx(4.0 * factor)
    assert backoff.wait_s(3, 1234) == backoff.wait_s(3, 1234)


def test_rollouts_refused_together_do_not_come_back_together() -> None:
    waits = {Backoff().wait_s(1, seed) for seed in range(20)}
    assert len(waits) == 20
    assert max(waits) - min(waits) > 0.25  # spread over most of [0.5, 1] s


def test_the_servers_retry_after_is_honoured_when_longer() -> None:
    backoff = Backoff()
    assert backoff.wait_s(1, 7, retry_after_s=5.0) == 5.0
    assert backoff.wait_s(20, 7, retry_after_s=90.0) == 90.0  # even past the cap
    shorter = backoff.wait_s(4, 7, retry_after_s=0.1)
    assert shorter == backoff.wait_s(4, 7) >= 4.0


def test_the_cap_holds_for_any_number_of_retries() -> None:
    assert 15.0 <= Backoff().wait_s(10_000, 3) <= 30.0
    assert Backoff(base_s=0.01, cap_s=0.02).wait_s(1, 3) <= 0.01


def test_retries_count_from_one() -> None:
    with pytest.raises(ValueError, match="from 1"):
        Backoff().wait_s(0, 1)
