"""The duplex environment's Python, found once a build under way beside the tests has finished.

``make test`` builds ``.venv-duplex`` while the tests run (tools/run-tests): a test that asks
for its Python before the build's status is written waits for it, and a failed build is one
clear error naming its log.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pmc.errors import PmcError
from pmc.testing.duplex_server import BUILDING_ENV, duplex_python


@pytest.fixture
def building(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The status file of a build said to be under way; the environment's Python is this one."""
    status = tmp_path / "duplex-env.status"
    monkeypatch.setenv(BUILDING_ENV, str(status))
    monkeypatch.delenv("PMC_DUPLEX_PYTHON", raising=False)
    return status


def test_it_waits_for_the_build_then_gives_the_python(
    building: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    polls: list[float] = []

    def sleep(seconds: float) -> None:
        # The first poll found no status: the build finishes now, as it would beside the tests.
        assert not building.exists()
        building.write_text("0\n")
        polls.append(seconds)

    monkeypatch.setattr("pmc.testing.duplex_server._env.time.sleep", sleep)
    monkeypatch.setattr("pmc.duplex_server._launch.DUPLEX_VENV", building.parent / "venv")
    (building.parent / "venv" / "bin").mkdir(parents=True)
    (building.parent / "venv" / "bin" / "python").touch()
    assert duplex_python() == building.parent / "venv" / "bin" / "python"
    assert polls == [0.5]


def test_a_failed_build_is_one_error_naming_its_log(building: Path) -> None:
    building.write_text("2\n")
    with pytest.raises(PmcError, match=r"its build failed \(exit 2\); see .*duplex-env\.log$"):
        duplex_python()


def test_an_override_does_not_wait(building: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PMC_DUPLEX_PYTHON", str(building.parent / "python"))
    (building.parent / "python").touch()
    assert duplex_python() == building.parent / "python"
