"""An adapter from a package of its own: declared as an entry point, installed, named by a card.

The test writes a tiny package (one module, one adapter, and one entry point that cannot load),
installs it with pip into a folder of its own, offline (no index, no build isolation: setuptools
comes from pmc's own environment), and runs ``pmc run`` in a new process that has the folder on
its path, so that the adapter is found only through the package's metadata.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pmc.harness import RolloutState, Run, read_rollout
from pmc.points import read_points
from pmc.systems import ADAPTER_GROUP
from pmc.testing.points import write_points

pytestmark = pytest.mark.slow

PYPROJECT = f"""\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "pmc-beep-adapter"
version = "0.1.0"

[project.entry-points."{ADAPTER_GROUP}"]
beep = "pmc_beep:Beep"
broken = "pmc_beep_missing:Nope"

[tool.setuptools]
py-modules = ["pmc_beep"]
"""

MODULE = '''\
"""A system that beeps half a second into the live stream, whatever it hears."""

import numpy as np

from pmc.systems import LocalAdapter


class Beep(LocalAdapter):
    VERSION = "7"

    def on_start(self) -> None:
        rate = self.card.sample_rate
        t = np.arange(rate // 2) / rate
        beep = (0.1 * np.sin(2 * np.pi * 440.0 * t)).astype(np.float32)
        self.spawn(self.speak_at(self.stream_ns(0.5), beep, "", 0.2))
'''


def card(name: str, adapter: str) -> str:
    return f'adapter = "{adapter}"\nfamily = "local"\ndescription = "{name}"\n'


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package, installed by pip into a folder of its own."""
    root = tmp_path_factory.mktemp("package")
    (root / "src").mkdir()
    (root / "src" / "pyproject.toml").write_text(PYPROJECT)
    (root / "src" / "pmc_beep.py").write_text(MODULE)
    target = root / "site"
    args = ["--quiet", "--no-index", "--no-deps", "--no-build-isolation", "--target"]
    subprocess.run(
        [sys.executable, "-m", "pip", "install", *args, str(target), str(root / "src")],
        check=True,
        env={**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        cwd=root,
    )
    return target


def pmc_run(site: Path, workdir: Path, card_path: Path) -> subprocess.CompletedProcess[str]:
    args = ["run", "--workdir", workdir, "--system", card_path, "--run-id", card_path.stem]
    return subprocess.run(
        [sys.executable, "-m", "pmc", *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(site)},
        timeout=300,
    )


def test_a_card_runs_an_adapter_that_only_its_package_declares(site: Path, tmp_path: Path) -> None:
    workdir = tmp_path / "w"
    points = write_points(workdir)
    path = tmp_path / "beeper.toml"
    path.write_text(card("beeper", "beep"))
    without = pmc_run(tmp_path / "no-package", workdir, path)
    assert without.returncode != 0 and "unknown adapter 'beep'" in without.stdout + without.stderr
    done = pmc_run(site, workdir, path)
    assert done.returncode == 0, done.stdout + done.stderr
    run = Run(workdir / "runs" / "beeper")
    entry = run.record.systems["beeper"]
    assert (entry.card.adapter, entry.adapter_version) == ("beep", "7")
    rollouts = list(run.rollouts(states=tuple(RolloutState)))
    assert {e.point_id for e in rollouts} == {p.point_id for p in read_points(workdir)}
    assert len(rollouts) == len(points) and all(e.state is RolloutState.DONE for e in rollouts)
    for e in rollouts:
        trace, _ = read_rollout(e.folder)
        heard = sum(o.samples for o in trace.outputs)
        assert heard == entry.card.sample_rate // 2, e.point_id  # the whole beep, once


def test_an_entry_point_that_does_not_load_names_its_package(site: Path, tmp_path: Path) -> None:
    workdir = tmp_path / "w"
    write_points(workdir)
    path = tmp_path / "broken.toml"
    path.write_text(card("broken", "broken"))
    done = pmc_run(site, workdir, path)
    assert done.returncode != 0
    said = done.stdout + done.stderr
    assert "system adapter 'broken' from pmc-beep-adapter (pmc_beep_missing:Nope)" in said
    assert "does not load: ModuleNotFoundError" in said and "Traceback" not in said
