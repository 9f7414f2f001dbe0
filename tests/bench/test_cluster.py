"""``pmc bench cluster``: the harness bench's rollouts split over one and two Ray processes.

What it measures is reported, not asserted (a bench's figures depend on the machine); the test
checks it runs the levels it says, in the processes it says, and picks the largest N by the
issue's bounds.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from pmc.bench import ClusterBenchRow, HarnessBenchRow, holds, largest_held
from pmc.cli import cli

pytestmark = pytest.mark.slow


def _row(
    processes: int, n: int, lateness_p99: float, failed: int = 0, harness_error_p99: float = 3.0
) -> ClusterBenchRow:
    level = HarnessBenchRow(
        concurrency=n,
        rollouts=n - failed,
        failed=failed,
        late_rollouts=0,
        frames=100 * n,
        lateness_p50_ms=0.1,
        lateness_p99_ms=lateness_p99,
        lateness_max_ms=lateness_p99 + 1,
        error_p50_ms=1.0,
        error_p99_ms=3.0,
        error_max_ms=4.0,
        error_mean_ms=1.0,
        reply_late_max_ms=0.5,
        harness_error_p99_ms=harness_error_p99,
        harness_error_max_ms=harness_error_p99 + 1,
        latency_ms=700.0,
        wall_s=5.0,
        cpu_s=4.0,
        preemptions=0,
    )
    return ClusterBenchRow(processes, (1,) * processes, level, 1.0, 0.5, 0.5, holds(level))


def test_the_largest_n_held_is_the_last_step_before_the_first_miss() -> None:
    rows = [
        _row(1, 64, 0.8),
        _row(2, 64, 0.5),
        _row(1, 128, 5.1),  # lateness p99 past 5 ms
        _row(2, 128, 0.9),
        _row(1, 192, 0.9, harness_error_p99=10.5),  # after a miss: never counted
        _row(2, 192, 1.0, failed=1),  # a rollout failed
        _row(2, 256, 1.0),  # after a miss: not counted
        _row(3, 64, 1.0, harness_error_p99=10.5),  # the harness's error past 10 ms
    ]
    assert [r.held for r in rows] == [True, True, False, True, False, False, True, False]
    assert largest_held(rows, 1) == 64
    assert largest_held(rows, 2) == 128
    assert largest_held(rows, 3) == 0


def test_the_bench_streams_each_level_in_as_many_processes_as_it_says(tmp_path: Path) -> None:
    path = tmp_path / "cluster.json"
    args = ["bench", "cluster", "--processes", "1,2", "--step", "2", "--max", "4"]
    args += ["--seconds", "0.2", "--latency-ms", "300"]
    result = CliRunner().invoke(cli, [*args, "--json", str(path)])
    assert result.exit_code == 0, result.output
    assert "cluster bench" in result.output and "held up to N" in result.output
    data = json.loads(path.read_text())
    rows = data["rows"]
    # Each count streams every step until it first misses the bounds, side by side.
    for count in (1, 2):
        of_count = [r for r in rows if r["processes"] == count]
        steps = [r["concurrency"] for r in of_count]
        assert steps in ([2], [2, 4])
        assert all(r["held"] for r in of_count[:-1])
        assert not of_count[-1]["held"] or steps[-1] == 4  # stopped at a miss or at --max
        held = [r["concurrency"] for r in of_count if r["held"]]
        assert data["largest_held"][str(count)] == max(held, default=0)
    for row in rows:
        assert row["rollouts"] + row["failed"] == row["concurrency"]
        assert len(row["process_ids"]) == row["processes"]
        assert len(set(row["process_ids"])) == row["processes"]  # distinct processes
        assert os.getpid() not in row["process_ids"]  # none of them this one
        assert row["fake_cpu_s"] >= 0 and 0 <= row["machine_busy"] <= 1
        assert (row["rollouts_per_s"] > 0) == (row["rollouts"] > 0)
