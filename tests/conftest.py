"""Test-wide guards: no test may reach the network."""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.shared import built_once

if os.environ.get("PYTEST_XDIST_WORKER"):
    # A pytest-xdist worker starts with COLUMNS=80 in its environment (a serial run has none),
    # and the command line's consoles fix their width from it when first imported: without it
    # they read COLUMNS when they print, as in a serial run (tests set it where width matters).
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)

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


DEMO_FIXTURES = ("demo_workdir", "demo_points_workdir", "reference_run")
"""The shared folders that take longest to build, each on the one before (tests/shared.py)."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Keep each module's tests on one pytest-xdist worker, in an order that keeps both busy.

    With ``--dist loadgroup``, a module's fixtures (a run, a server, a browser) are then built
    once, not once per worker that got one of its tests. A module that shares state beyond
    itself names its group (``pytestmark = pytest.mark.xdist_group(NAME)``): ``ray`` for every
    test that starts or joins a Ray cluster (Ray's ``auto`` joins any cluster running on the
    machine, so two at once would find each other).

    Order: the first group that needs the reference run goes first, its module that needs it
    first, so one worker builds the demo's folders from the start; then every group that needs
    none of them, which the other worker runs meanwhile; then the rest, once they are built.
    Every worker sorts the same collection the same way, as pytest-xdist requires.
    """
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))

    def group(item: pytest.Item) -> str:
        mark = item.get_closest_marker("xdist_group")
        return str(mark.args[0]) if mark and mark.args else ""

    def needs(item: pytest.Item, fixtures: tuple[str, ...]) -> bool:
        return any(name in getattr(item, "fixturenames", ()) for name in fixtures)

    modules_needing_run = {i.nodeid.split("::", 1)[0] for i in items if needs(i, DEMO_FIXTURES[2:])}
    first = next((group(i) for i in items if needs(i, DEMO_FIXTURES[2:])), None)
    demo_groups = {group(i) for i in items if needs(i, DEMO_FIXTURES)}
    order = {id(item): n for n, item in enumerate(items)}

    def key(item: pytest.Item) -> tuple[int, int, int]:
        g = group(item)
        rank = 0 if g == first else 2 if g in demo_groups else 1
        builds = 0 if item.nodeid.split("::", 1)[0] in modules_needing_run else 1
        return (rank, builds if rank == 0 else 0, order[id(item)])

    items.sort(key=key)


@pytest.fixture(scope="session")
def demo_workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The whole bundled demo corpus, synthesised and imported once per test run (slow).

    Shared by every worker (tests/shared.py): read it, never write to it.
    """

    def build(folder: Path) -> None:
        from click.testing import CliRunner

        from pmc.cli import cli

        args = ["corpus", "import", "demo", "--workdir", str(folder / "w")]
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, result.output

    return built_once(tmp_path_factory, "demo-work", build) / "w"


@pytest.fixture(scope="session")
def demo_points_workdir(demo_workdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo corpus taken through labels, selection and points (slow; once per test run).

    Shared by every worker: read it, never write to it (a test that reruns a stage on it works
    on a copy; the reference run has a working directory of its own).
    """

    def build(folder: Path) -> None:
        import shutil

        from click.testing import CliRunner

        from pmc.cli import cli

        workdir = folder / "w"
        shutil.copytree(demo_workdir, workdir)
        # Audio paths are stored relative to the working directory, so the copy stands alone.
        runner = CliRunner()
        for args in (["labels"], ["select", "--cutoff", "0"], ["points"]):
            result = runner.invoke(cli, [*args, "--workdir", str(workdir)])
            assert result.exit_code == 0, result.output

    return built_once(tmp_path_factory, "demo-points", build) / "w"


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
def reference_run(demo_points_workdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reference systems run and scored on the demo points (slow; once per test run).

    Its working directory links every folder of ``demo_points_workdir`` but ``runs``, so the
    run is written beside the demo points, never into them.
    """
    from pmc.harness import run_rollouts, runs_dir

    def build(folder: Path) -> None:
        from pmc.scoring import ScoreSettings, run_scoring
        from pmc.systems import bundled_cards, find_card

        workdir = folder / "w"
        workdir.mkdir()
        for entry in demo_points_workdir.iterdir():
            if entry.name != "runs":
                (workdir / entry.name).symlink_to(entry)
        systems = bundled_cards()
        cards = [find_card(n, systems) for n in REFERENCE_SYSTEMS]
        run_rollouts(workdir, cards, reference_settings())
        # tiny.en, the fast option: the person's words set the transcription ceiling either way.
        asr = ScoreSettings(asr="faster-whisper:tiny.en")
        run_scoring(runs_dir(workdir) / "reference", asr, workers=2)

    return runs_dir(built_once(tmp_path_factory, "reference", build) / "w") / "reference"
