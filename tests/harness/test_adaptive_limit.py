"""A card's adaptive concurrency: halved once per burst of refusals, earned back by successes."""

import asyncio

import pytest

from pmc.harness._limit import AdaptiveLimit, Aimd


def test_a_refusal_halves_the_limit_down_to_one() -> None:
    aimd = Aimd(10)
    for expected in (5, 2, 1, 1):
        assert aimd.refused(aimd.epoch)
        assert aimd.limit == expected
    assert aimd.lowest == 1


def test_a_burst_of_refusals_of_sessions_admitted_together_counts_once() -> None:
    aimd = Aimd(8)
    admitted = [aimd.epoch for _ in range(8)]  # eight sessions opened under the limit of 8
    stepped = [aimd.refused(epoch) for epoch in admitted[:5]]  # five of them refused
    assert stepped == [True, False, False, False, False]
    assert (aimd.limit, aimd.lowest) == (4, 4)
    # A session admitted under the new limit and refused is a new window: it halves again.
    assert aimd.refused(aimd.epoch)
    assert (aimd.limit, aimd.lowest) == (2, 2)


def test_the_limit_grows_by_one_after_as_many_successes_as_it_is_up_to_the_ceiling() -> None:
    aimd = Aimd(6)
    aimd.refused(aimd.epoch)
    aimd.refused(aimd.epoch)
    assert aimd.limit == 1
    limits = []
    for _ in range(1 + 2 + 3 + 4 + 5 + 3):
        aimd.succeeded()
        limits.append(aimd.limit)
    # 1 success at 1, 2 at 2, 3 at 3, ... then nothing past the ceiling.
    expected = [2, 2, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 5, 6, 6, 6, 6]
    assert limits == expected
    assert aimd.lowest == 1


def test_a_refusal_forfeits_the_successes_counted_towards_the_next_step() -> None:
    aimd = Aimd(8)
    aimd.refused(aimd.epoch)  # 4
    for _ in range(3):
        aimd.succeeded()
    aimd.refused(aimd.epoch)  # 2, and the 3 successes towards 5 are gone
    aimd.succeeded()
    assert aimd.limit == 2
    aimd.succeeded()
    assert aimd.limit == 3


def test_a_limit_is_at_least_one() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Aimd(0)


async def settle() -> None:
    """Let every task that can run, run (progress, not time)."""
    for _ in range(50):
        await asyncio.sleep(0)


def test_the_adaptive_limit_admits_no_more_than_the_limit_in_arrival_order() -> None:
    async def scenario() -> tuple[list[str], list[int]]:
        limit = AdaptiveLimit(4)
        admitted: list[str] = []
        in_flight: list[int] = []
        release = {name: asyncio.Event() for name in "abcdefgh"}

        async def rollout(name: str, refuse: bool) -> None:
            epoch = await limit.acquire()
            admitted.append(name)
            in_flight.append(limit.in_flight)
            await release[name].wait()
            if refuse:
                limit.aimd.refused(epoch)
            else:
                limit.aimd.succeeded()
            limit.release()

        tasks = [asyncio.create_task(rollout(n, n in "cd")) for n in "abcdefgh"]
        await settle()
        assert admitted == ["a", "b", "c", "d"]  # the first four, at once
        release["c"].set()
        release["d"].set()
        await settle()
        # Two refusals of one window: 4 -> 2, and a, b still hold both slots.
        assert (limit.aimd.limit, admitted) == (2, ["a", "b", "c", "d"])
        release["a"].set()
        await settle()
        assert admitted == ["a", "b", "c", "d", "e"]
        release["b"].set()  # the second success at 2: the limit is 3
        await settle()
        assert (limit.aimd.limit, admitted[5:]) == (3, ["f", "g"])
        release["e"].set()
        await settle()
        assert admitted[7:] == ["h"]
        for name in "fgh":
            release[name].set()
        await asyncio.gather(*tasks)
        return admitted, in_flight

    admitted, in_flight = asyncio.run(scenario())
    assert admitted == list("abcdefgh")
    assert in_flight == [1, 2, 3, 4, 2, 2, 3, 3]


def test_a_rollout_cancelled_while_waiting_takes_no_slot() -> None:
    async def scenario() -> list[str]:
        limit = AdaptiveLimit(1)
        admitted: list[str] = []

        async def rollout(name: str, hold: asyncio.Event) -> None:
            await limit.acquire()
            admitted.append(name)
            await hold.wait()
            limit.aimd.succeeded()
            limit.release()

        holds = {name: asyncio.Event() for name in "abc"}
        tasks = {name: asyncio.create_task(rollout(name, holds[name])) for name in "abc"}
        await settle()
        tasks["b"].cancel()
        holds["a"].set()  # a's slot goes to c, b having given up its place
        await settle()
        assert tasks["b"].cancelled()
        assert (admitted, limit.in_flight) == (["a", "c"], 1)
        holds["c"].set()
        await tasks["c"]
        assert limit.in_flight == 0
        return admitted

    assert asyncio.run(scenario()) == ["a", "c"]
