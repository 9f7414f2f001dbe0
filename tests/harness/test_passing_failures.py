"""Failures a server says are passing: retried after a backoff, concurrency stepped down, observed.

The ``limited`` fake refuses sessions by count (a budget of refusals, while too many are open)
and holds the sessions it lets in until its refusals are spent, so which rollouts are refused,
and when the limit steps down, follow from progress alone; the waits are checked as lower
bounds only, which hold on any machine.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from pmc import io
from pmc.cli import cli
from pmc.harness import (
    ERROR_FILE,
    RUN_FILE,
    TRACE_FILE,
    Backoff,
    ClockKind,
    ProtocolParams,
    RunSettings,
    run_rollouts,
    runs_dir,
)
from pmc.systems import Family, RetryReason, SystemCard
from pmc.testing.points import write_points
from pmc.testing.systems import LimitedSystem, RateLimiter

RETRY_AFTER_S = 0.05
FAST = Backoff(base_s=0.01, cap_s=0.01)
"""Every wait is then the server's retry-after: the tests take no longer than they must."""
EVENT = f"event {LimitedSystem.UNKNOWN_EVENT}"
FIELD = f"field {LimitedSystem.UNKNOWN_FIELD}"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("passing-work")
    write_points(path)
    return path


def limiter(
    monkeypatch: pytest.MonkeyPatch,
    max_open: int,
    refusals: int,
    reason: RetryReason = RetryReason.RATE_LIMITED,
) -> RateLimiter:
    server = RateLimiter(max_open, refusals, RETRY_AFTER_S, reason)
    monkeypatch.setattr(LimitedSystem, "limiter", server)
    return server


def card(name: str, concurrency: int, **params: object) -> SystemCard:
    # A limit far below the harness's 60 s, so a fake that is never released fails, not hangs.
    params = {"preload_timeout_s": 20.0, **params}
    return SystemCard(name, "limited", Family.LOCAL, concurrency=concurrency, params=params)


def rollout_folders(run: Path) -> list[Path]:
    return sorted(p.parent for p in run.rglob("*") if p.is_file() and p.parent.name.isdigit())


def assert_each_rollout_written_once(run: Path, expected: int) -> None:
    folders = sorted(set(rollout_folders(run)))
    assert len(folders) == expected
    for folder in folders:
        assert sorted(p.name for p in folder.iterdir()) == ["output.wav", "played.flac", TRACE_FILE]
    assert not list(run.rglob(ERROR_FILE))


def retry_gaps(server: RateLimiter) -> list[float]:
    """For each refusal, how long until the same rollout asked again."""
    gaps = []
    for i, refusal in enumerate(server.arrivals):
        if refusal.refused:
            later = next(a for a in server.arrivals[i + 1 :] if a.seed == refusal.seed)
            gaps.append(later.at_s - refusal.at_s)
    return gaps


def test_refused_rollouts_come_back_after_their_backoff_and_the_run_says_so(
    workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Virtual clock: one rollout at a time. The first three sessions are refused; all four
    # rollouts hold their card's slot by then (admitted together), so the limit halves once.
    server = limiter(monkeypatch, max_open=0, refusals=3)
    path = tmp_path / "limited-4.toml"
    path.write_text('adapter = "limited"\nfamily = "local"\nconcurrency = 4\n', encoding="utf-8")
    args = ["run", "--workdir", str(workdir), "--system", str(path), "--run-id", "backoff"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output

    run = runs_dir(workdir) / "backoff"
    assert_each_rollout_written_once(run, 4)
    refused = [a for a in server.arrivals if a.refused]
    assert len(refused) == 3 and len({a.seed for a in refused}) == 3
    assert len(server.arrivals) == 3 + 4
    # One rollout at a time, yet every first attempt came before any retry: a rollout waiting
    # out its backoff (0.5 s at least) held no slot, and the others needed only their inputs.
    assert len({a.seed for a in server.arrivals[:4]}) == 4
    # The default backoff: 0.5 to 1 s for a first retry, drawn from the rollout's seed.
    waits = [Backoff().wait_s(1, a.seed, RETRY_AFTER_S) for a in refused]
    assert all(0.5 <= w <= 1.0 for w in waits)
    for gap, wait in zip(retry_gaps(server), waits, strict=True):
        assert gap >= wait - 1e-3
    observed = {
        "retried": 3,
        "retry_reasons": {"rate_limited": 3},
        "waited_s": round(sum(waits), 3),
        "lowest_concurrency": 2,
        "unknown": {EVENT: 4, FIELD: 4},
    }
    record = io.read_json(run / RUN_FILE)
    assert record["observed"] == {"limited-4": observed}
    lines = result.output.splitlines()
    assert "limited-4: the server refused sessions; concurrency stepped down to 2 of 4" in lines
    assert (
        f"limited-4: 3 attempt(s) retried after passing failures (rate_limited x3), "
        f"{sum(waits):.1f} s waited"
    ) in lines
    unknown_event = (
        "limited-4: the API sent 4 event(s) pmc does not know: response.hologram.delta x4"
    )
    assert unknown_event in lines
    assert "limited-4: the API sent 4 field(s) pmc does not know: serverHologram x4" in lines

    # Resumed with nothing left to do, nothing is observed and run.json stays as it was.
    before = (run / RUN_FILE).read_bytes()
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 0, again.output
    assert "pmc does not know" not in again.output and "retried" not in again.output
    assert (run / RUN_FILE).read_bytes() == before


def test_a_burst_of_refusals_steps_the_card_down_once_and_every_rollout_completes(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Real clock, four sessions at once allowed by the card, two by the server: the first
    # wave's two extra sessions are refused together, and the limit halves once, to 2.
    server = limiter(monkeypatch, max_open=2, refusals=2)
    limited = card("limited-burst", 4, point_kinds=["turn_end"])
    params = ProtocolParams(no_reply_s=0.5)
    settings = RunSettings(
        "burst", rollouts=3, clock=ClockKind.REAL, params=params, backoff=FAST, retries=0
    )
    tally = run_rollouts(workdir, [limited], settings)["limited-burst"]
    assert (tally.done, tally.failed, tally.retried) == (6, 0, 2)
    assert tally.retry_reasons == {"rate_limited": 2}
    assert tally.waited_s == pytest.approx(2 * RETRY_AFTER_S)
    assert (tally.concurrency, tally.lowest_concurrency) == (4, 2)
    assert tally.unknown == {EVENT: 6, FIELD: 6}
    assert [a.refused for a in server.arrivals[:4]] == [False, False, True, True]
    assert len(server.arrivals) == 6 + 2
    # Stepped down to 2, then earned back one per two rollouts done: never 4 again while
    # sessions were open (without the step down, the next two would have joined at once).
    assert server.most_open <= 3
    assert all(gap >= RETRY_AFTER_S - 1e-3 for gap in retry_gaps(server))
    run = runs_dir(workdir) / "burst"
    assert_each_rollout_written_once(run, 6)
    observed = io.read_json(run / RUN_FILE)["observed"]["limited-burst"]
    assert observed["lowest_concurrency"] == 2
    assert observed["retried"] == 2


def test_a_rollout_refused_every_time_is_given_up_after_its_attempts(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    limiter(monkeypatch, max_open=0, refusals=100)
    settings = RunSettings("refused", retry_attempts=3, backoff=FAST)
    tally = run_rollouts(workdir, [card("limited-never", 4)], settings)["limited-never"]
    assert (tally.done, tally.failed) == (0, 4)
    assert (tally.retried, tally.retry_reasons) == (4 * 2, {"rate_limited": 4 * 3})
    assert tally.waited_s == pytest.approx(4 * 2 * RETRY_AFTER_S)
    assert tally.lowest_concurrency == 1  # each retry was admitted under the lowered limit
    assert tally.unknown == {}
    errors = sorted((runs_dir(workdir) / "refused").rglob(ERROR_FILE))
    assert len(errors) == 4
    cause = "transport: HTTP 429: 0 sessions are open already (limited)"
    for path in errors:
        assert io.read_json(path)["attempts"] == [cause] * 3


def test_a_server_going_away_is_retried_without_stepping_down(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    limiter(monkeypatch, max_open=0, refusals=3, reason=RetryReason.GOING_AWAY)
    settings = RunSettings("going-away", backoff=FAST)
    tally = run_rollouts(workdir, [card("limited-away", 4)], settings)["limited-away"]
    assert (tally.done, tally.retried, tally.retry_reasons) == (4, 3, {"going_away": 3})
    assert tally.lowest_concurrency == 4
    observed = io.read_json(runs_dir(workdir) / "going-away" / RUN_FILE)["observed"]
    assert observed["limited-away"]["lowest_concurrency"] == 4


def test_observations_add_up_over_the_invocations_of_a_run(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    limited = card("limited-grow", 4)
    limiter(monkeypatch, max_open=0, refusals=1)
    run_rollouts(workdir, [limited], RunSettings("grow", backoff=FAST))
    first = io.read_json(runs_dir(workdir) / "grow" / RUN_FILE)["observed"]["limited-grow"]
    assert (first["retried"], first["lowest_concurrency"]) == (1, 2)
    # A second invocation with more rollouts: the run is resumed, not refused, and its new
    # refusals (now two of one window, so one step down) add to the first's.
    limiter(monkeypatch, max_open=0, refusals=2)
    tallies = run_rollouts(workdir, [limited], RunSettings("grow", rollouts=2, backoff=FAST))
    assert (tallies["limited-grow"].kept, tallies["limited-grow"].done) == (4, 4)
    record = io.read_json(runs_dir(workdir) / "grow" / RUN_FILE)
    assert record["observed"] == {
        "limited-grow": {
            "retried": 3,
            "retry_reasons": {"rate_limited": 3},
            "waited_s": round(3 * RETRY_AFTER_S, 3),
            "lowest_concurrency": 2,
            "unknown": {EVENT: 8, FIELD: 8},
        }
    }
    assert record["rollouts"] == 2


def test_a_clean_run_records_no_observations(workdir: Path) -> None:
    never = SystemCard("never-speak", "never-speak", Family.LOCAL)
    tally = run_rollouts(workdir, [never], RunSettings("clean"))["never-speak"]
    assert (tally.done, tally.retried, tally.lowest_concurrency, tally.unknown) == (4, 0, 1, {})
    assert tally.observed() is None
    assert "observed" not in io.read_json(runs_dir(workdir) / "clean" / RUN_FILE)
