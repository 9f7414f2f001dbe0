"""`pmc bench duplex` runs end to end (tiny models, a short rollout) and reports its figures."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from pmc.cli import cli


@pytest.mark.slow
def test_bench_duplex_reports_step_times_and_input_lateness(tiny_models: object) -> None:
    args = ["bench", "duplex", "--sessions", "1", "--live-s", "1.6", "--history-s", "2"]
    result = CliRunner().invoke(cli, [*args, "--steps", "20"])
    assert result.exit_code == 0, result.output
    assert "server step, idle (20 steps)" in result.output
    assert "server step, live, instance 0" in result.output
    assert "input lateness, rollout 0" in result.output
