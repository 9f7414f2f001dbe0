"""Test-wide guards: no test may reach the network."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_real_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address: Any) -> Any:
    host = address[0] if isinstance(address, tuple) else None
    if host is not None:
        try:
            local = ipaddress.ip_address(host).is_loopback
        except ValueError:
            local = host == "localhost"
        if not local:
            raise RuntimeError(f"a test tried to reach the network: {address!r}")
    return _real_connect(self, address)


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(socket.socket, "connect", _loopback_only)
    yield


@pytest.fixture(scope="session")
def demo_workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The whole bundled demo corpus, synthesised and imported once per test session (slow)."""
    from click.testing import CliRunner

    from pmc.cli import cli

    workdir = tmp_path_factory.mktemp("demo-work")
    result = CliRunner().invoke(cli, ["corpus", "import", "demo", "--workdir", str(workdir)])
    assert result.exit_code == 0, result.output
    return workdir


@pytest.fixture(scope="session")
def demo_points_workdir(demo_workdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo corpus taken through labels, selection and points (slow; once per session)."""
    import shutil

    from click.testing import CliRunner

    from pmc.cli import cli

    workdir = tmp_path_factory.mktemp("points") / "w"
    shutil.copytree(demo_workdir, workdir)
    # Audio paths are stored relative to the working directory, so the copy stands alone.
    runner = CliRunner()
    for args in (["labels"], ["select", "--cutoff", "0"], ["points"]):
        result = runner.invoke(cli, [*args, "--workdir", str(workdir)])
        assert result.exit_code == 0, result.output
    return workdir


REVIEW_MARKUP = "<script>alert(1)</script>"
"""A word as a hostile transcript might hold it."""


@pytest.fixture(scope="session")
def review_built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small working directory ready for review, built once per session: copy it to change it.

    The first word of its first conversation is markup (``REVIEW_MARKUP``), so that every test
    of the review app also shows it stays text.
    """
    from pmc.testing.review import review_workdir

    return review_workdir(tmp_path_factory.mktemp("review"), first_word=REVIEW_MARKUP)


REFERENCE_SYSTEMS = ("never-speak", "always-speak", "person", "shuffled-person")
"""The reference systems (docs/architecture.md "Systems"): what defines them is tested on the demo
points."""


REFERENCE_CAP_S = 15.0
"""The reference run's cap on a reply: longer than every demo reply (the longest ends 13.3 s
after its boundary), half the paper's 30 s, so that always-speak's monologues, transcribed at
every point, do not take the suite's longest step to three minutes."""


def reference_settings(ray: str | None = None) -> Any:
    """How ``reference_run`` is run (``ray``: on that cluster instead)."""
    from pmc.harness import ProtocolParams, RunSettings

    return RunSettings("reference", params=ProtocolParams(cap_s=REFERENCE_CAP_S), ray=ray)


@pytest.fixture(scope="session")
def reference_run(demo_points_workdir: Path) -> Path:
    """The reference systems run and scored on the demo points (slow; once per session)."""
    from pmc.harness import run_rollouts, runs_dir
    from pmc.scoring import ScoreSettings, run_scoring
    from pmc.systems import bundled_cards, find_card

    systems = bundled_cards()
    cards = [find_card(n, systems) for n in REFERENCE_SYSTEMS]
    run_rollouts(demo_points_workdir, cards, reference_settings())
    path = runs_dir(demo_points_workdir) / "reference"
    # tiny.en, the fast option: the person's words set the transcription ceiling either way.
    run_scoring(path, ScoreSettings(asr="faster-whisper:tiny.en"), workers=2)
    return path
