"""Whether an optional extra is installed, read from pmc's own metadata (what the demo asks)."""

import importlib.metadata
from collections.abc import Iterator

import pytest

from pmc.cli._demo import _in_demo
from pmc.systems import extra_installed, load_card
from tests.systems.conftest import SYSTEMS


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    extra_installed.cache_clear()
    yield
    extra_installed.cache_clear()


def test_the_dev_install_has_pipecat_and_an_undeclared_extra_is_not_installed() -> None:
    assert extra_installed("pipecat")  # make test installs .[dev,pipecat]
    assert not extra_installed("no-such-extra")


def test_an_extra_with_one_missing_distribution_is_not_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    declared = [
        'numpy>=1.26; extra == "mixed"',
        'pmc-surely-absent-dist[x]==1.*; extra == "mixed"',
        'numpy>=1.26; extra == "present"',
        "soxr>=1.0",
    ]
    monkeypatch.setattr(importlib.metadata, "requires", lambda name: declared)
    assert not extra_installed("mixed")
    assert extra_installed("present")


def test_the_demo_runs_smart_turn_only_where_pipecat_is_installed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    smart, fast, endpointer = (
        load_card(SYSTEMS / f"{name}.toml")
        for name in ("smart-turn", "smart-turn-fast", "endpointer-300")
    )
    assert _in_demo(smart) and _in_demo(endpointer)
    assert not _in_demo(fast)  # one trained-model card is enough for the demo's comparison
    monkeypatch.setattr(importlib.metadata, "requires", lambda name: [])
    extra_installed.cache_clear()
    assert not _in_demo(smart)
    assert _in_demo(endpointer)
    assert "smart-turn: skipped, it needs the pipecat extra (pip install 'pmc[pipecat]')" in (
        capsys.readouterr().out
    )
