"""Test-wide guards: no test may reach the network."""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pmc.cpu import long_slices
from tests.shared import SHARED_ENV, built_once

if os.environ.get("PYTEST_XDIST_WORKER"):
    # A pytest-xdist worker starts with COLUMNS=80 in its environment (a serial run has none),
    # and the command line's consoles fix their width from it when first imported: without it
    # they read COLUMNS when they print, as in a serial run (tests set it where width matters).
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)

if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get(SHARED_ENV):
    # make test's workers mostly compute, several to a core: long scheduler slices spare them
    # the cache refills of being switched out every 1.4 ms (pmc.cpu). Their real-time parts (a
    # run's streams, the fakes and servers the tests start) run on the default slice, which
    # preempts them; the lanes beside them keep the default slice throughout.
    long_slices()

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


RAY_MODULES = (
    "tests/bench/test_cluster.py",
    "tests/duplex_server/test_pool.py",
    "tests/harness/test_ray.py",
    "tests/harness/test_ray_node.py",
    "tests/harness/test_ray_demo.py",
)
"""Every module of the parallel part that starts or joins a Ray cluster, in the order they run.

They share one worker (:data:`SHARED_WORKER`) and go first, as the longest chain of the suite:
``test_ray_demo`` needs the reference run (the demo synthesised, its points, the reference
systems run and scored). The four that need no demo run while another worker synthesises it
(the first long module asks for the demo points): ``test_ray_demo``, asked for before the
demo was there, waited for it for over a minute of a fresh run with its worker idle (profiled
at 63d3852). The harness modules stay together, as their cluster is one package fixture."""

SHARED_WORKER = dict.fromkeys(RAY_MODULES, "ray")
"""Modules whose tests share one worker beyond their own module: every test that starts or joins
a Ray cluster, one after another (two clusters started by one process's tests at once would
share its ``RAY_TMPDIR`` and its connection)."""

WAITING_LANES = (
    (
        "tests/systems/test_agent_wires.py",
        "tests/systems/test_agent_talk_over.py",
        "tests/systems/test_hosted_adapters.py",
        "tests/systems/test_duplex_talk_over.py",
        "tests/curves/test_detector.py",
        "tests/harness/test_passing_failures.py",
        "tests/systems/test_semantic_eagerness.py",
        "tests/harness/test_network_real_clock.py",
    ),
    (
        "tests/harness/test_stage.py",
        "tests/systems/test_hosted_talk_over.py",
        "tests/systems/test_voicebench.py",
        "tests/systems/test_vllm_omni.py",
        "tests/systems/test_hosted_keys.py",
        "tests/systems/test_hosted_faults.py",
        "tests/systems/test_hosted_pushback.py",
        "tests/systems/test_audio_history.py",
    ),
)
"""Modules that mostly wait on real-time streams, marked ``waiting``: ``make test`` runs each
lane in a pytest of its own beside the workers, from their first collection, at a priority
above theirs (tools/run-tests). On a worker they held it while the cores had time to spare. As
one lane they took 500 s on 2 cores and ended 100 s after the workers, with the cores mostly
idle; split into two lanes of about 250 s each (as measured on a fresh clone), then about 230 s
once LiveKit's module ran alone. The modules that need the demo points (``hosted_pushback``,
``audio_history``) run last in the second lane: the workers build them in the first two to
three minutes, while the lanes fill the cores the corpus's synthesis leaves idle."""

WAITING_MODULES = tuple(m for lane in WAITING_LANES for m in lane)

ALONE_MODULES = (
    "tests/harness/test_known_timing.py",
    "tests/harness/test_ray_timing.py",
    "tests/systems/test_pipecat_bot.py",
    "tests/systems/test_livekit.py",
)
"""Every module with tests marked ``alone`` (each module marks them and says why): ``make test``
runs these modules in their pytest of their own, so a test marked ``alone`` elsewhere would run
nowhere; collection refuses one (:func:`pytest_collection_modifyitems`)."""


def lane_modules(lane: str) -> tuple[str, ...]:
    """The modules that one of ``make test``'s lanes runs: ``waiting-1``, ``waiting-2``, ``alone``.

    Naming them spares that lane's pytest collecting every module of the suite
    (tools/run-tests).
    """
    lanes = {f"waiting-{i}": modules for i, modules in enumerate(WAITING_LANES, 1)}
    return {**lanes, "alone": ALONE_MODULES}[lane]


LONG_MODULES = (
    "tests/cli/test_user_commands.py",
    "tests/scoring/test_stage.py",
    "tests/duplex_server/test_e2e.py",
    "tests/systems/test_hosted_e2e.py",
    "tests/systems/test_pcm_agent.py",
)
"""The longest modules after the Ray ones (over 30 s each on 2 cores), handed out next, so that
no worker is left with a long module at the end. The demo slice goes first, as the demo corpus
it synthesises starts the suite's longest chain; the two that need no demo come before the two
that need its points, which a worker given them first waited for, idle, for 110 s of a fresh
run (profiled at f10457c)."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put the Ray modules, then the long ones, before the rest; mark the waiting modules.

    A test marked ``alone`` outside :data:`ALONE_MODULES` stops the run, saying where.
    """
    rank = {module: i for i, module in enumerate((*RAY_MODULES, *LONG_MODULES))}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        if module in WAITING_MODULES:
            item.add_marker(pytest.mark.waiting)
        if item.get_closest_marker("alone") and module not in ALONE_MODULES:
            raise pytest.UsageError(
                f"{item.nodeid} is marked alone but {module} is not in ALONE_MODULES "
                "(tests/conftest.py): make test would run it nowhere"
            )


COLLECTED = "collected"
"""The mark a pytest-xdist worker leaves in ``PMC_TEST_SHARED`` once it has collected the suite."""


def pytest_collection_finish(session: pytest.Session) -> None:
    """Mark, for ``make test``'s lanes (tools/run-tests), that a worker has collected the suite.

    Its imports compiled every module the suite imports (pmc's, the tests', the packages') and
    wrote the bytecode beside them; a lane started after the mark reads that, where one started
    beside the workers compiled the same modules again (about 5 CPU-seconds in a fresh clone).
    """
    shared = os.environ.get(SHARED_ENV)
    if shared and os.environ.get("PYTEST_XDIST_WORKER"):
        (Path(shared) / COLLECTED).touch()


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Hand pytest-xdist's workers whole modules (and :data:`SHARED_WORKER`'s as one), in order.

    A module's fixtures (a run, a server, a browser) are then built once, not once per worker
    that got one of its tests. pytest-xdist's own ``--dist loadgroup`` cannot do this here: it
    renames node ids to carry the group, and pytest 9 no longer reads the renamed id, so every
    test was scheduled alone. Only the default distribution is replaced; modules are handed out
    in collection order (:func:`pytest_collection_modifyitems`), not by their number of tests.
    """
    if config.getvalue("dist") not in ("load", "loadscope"):
        return None
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False

    class ByModule(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return SHARED_WORKER.get(module, module)

    return ByModule(config, log)


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


REFERENCE_TALK_OVER_CONVERSATIONS = 3
"""The reference run plays the talk-over points of this many of the demo's ten conversations
(18 of its 60, both kinds; each conversation has both): what the reference systems do there is
checked on them, and the Ray run compares the same points. Scoring all 60 points against four
systems, always-speak's monologue transcribed at each, cost the suite's longest chain a minute."""


@pytest.fixture(scope="session")
def reference_run(demo_points_workdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reference systems run and scored on the demo points (slow; once per test run).

    Every point of the turn-taking and recall kinds, and the talk-over points of the first
    :data:`REFERENCE_TALK_OVER_CONVERSATIONS` conversations. Its working directory links every
    folder of ``demo_points_workdir`` but ``runs`` (and its points' cuts and files), so the run
    is written beside the demo points, never into them.
    """
    from pmc.harness import run_rollouts, runs_dir

    def build(folder: Path) -> None:
        from pmc.points import read_points
        from pmc.scoring import ScoreSettings, run_scoring
        from pmc.systems import bundled_cards, find_card
        from tests.systems.conftest import linked_points

        workdir = folder / "w"
        workdir.mkdir()
        for entry in demo_points_workdir.iterdir():
            if entry.name not in ("runs", "points"):
                (workdir / entry.name).symlink_to(entry)
        points = read_points(demo_points_workdir)
        first = sorted({p.conversation_id for p in points})[:REFERENCE_TALK_OVER_CONVERSATIONS]
        chosen = [p for p in points if not p.kind.talks_over or p.conversation_id in first]
        linked_points(demo_points_workdir, chosen, workdir)
        for entry in (demo_points_workdir / "points").iterdir():
            if entry.is_file() and not (workdir / "points" / entry.name).exists():
                (workdir / "points" / entry.name).symlink_to(entry)  # the funnel, the windows
        systems = bundled_cards()
        cards = [find_card(n, systems) for n in REFERENCE_SYSTEMS]
        run_rollouts(workdir, cards, reference_settings())
        # tiny.en, the fast option: the person's words set the transcription ceiling either way.
        asr = ScoreSettings(asr="faster-whisper:tiny.en")
        run_scoring(runs_dir(workdir) / "reference", asr, workers=2)

    return runs_dir(built_once(tmp_path_factory, "reference", build) / "w") / "reference"
