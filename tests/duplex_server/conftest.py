"""The full-duplex tests' fixtures: tiny models, the two servers, a small point set.

Each lives until this package's tests are done (an idle server still takes CPU from the rest).

The servers run in the duplex environment (``.venv-duplex``, PyTorch's CPU build and moshi),
as subprocesses on free loopback ports; the tests drive them from pmc's own environment. Where
the duplex environment is missing, the tests that need it are skipped, saying how to build it
(``make test`` builds it first).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import soundfile as sf

from pmc.errors import PmcError
from pmc.testing.duplex_server import build_tiny_models, duplex_python, duplex_server
from tests.shared import built_once

HISTORY_CAP_FRAMES = 2048
"""The server's cap in the tests: PersonaPlex's, so the personaplex card's own cap is equal."""


@pytest.fixture(scope="package")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny random-weight Mimi, LM and tokenizer, built once per test run (about 3 s)."""
    try:
        duplex_python()
    except PmcError as exc:
        pytest.skip(str(exc))
    return built_once(tmp_path_factory, "tiny-moshi", build_tiny_models)


@pytest.fixture(scope="package")
def duplex_base(tiny_models: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``pmc serve-duplex`` on the tiny models, two instances: its base URL."""
    log = tmp_path_factory.mktemp("duplex-server") / "server.log"
    with duplex_server(tiny_models, log, instances=2) as served:
        yield served.base


def _cost_s(points: Path, row: dict[str, object]) -> float:
    """What a point costs a duplex rollout, in seconds.

    Its live audio runs in real time; its history's prefill, one model step per 80 ms frame,
    runs at roughly a twentieth of that on the tiny models.
    """
    cuts = row["cuts"]
    assert isinstance(cuts, dict)
    live = sf.info(str(points / cuts["live"])).duration
    history = sf.info(str(points / cuts["history_user"])).duration
    return float(live + history / 20)


@pytest.fixture(scope="package")
def duplex_points(demo_points_workdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working directory with two demo points: the cheapest pause and turn end.

    Every rollout of a duplex system runs in real time, and a random-weight model never stops
    talking, so a turn end runs to the 30 s cap: two points keep the suite short. The demo's
    files are linked, not copied; only the manifest is new.
    """
    workdir = tmp_path_factory.mktemp("duplex-points") / "w"
    (workdir / "points").mkdir(parents=True)
    for entry in demo_points_workdir.iterdir():
        if entry.name not in ("points", "runs"):
            (workdir / entry.name).symlink_to(entry)
    source = demo_points_workdir / "points"
    for entry in source.iterdir():
        if entry.name != "manifest.jsonl":
            (workdir / "points" / entry.name).symlink_to(entry)
    rows = [json.loads(line) for line in (source / "manifest.jsonl").read_text().splitlines()]
    keep = []
    for kind in ("pause", "turn_end"):
        of_kind = [r for r in rows if r["kind"] == kind]
        keep.append(min(of_kind, key=lambda r: _cost_s(source, r)))
    lines = "".join(json.dumps(r) + "\n" for r in keep)
    (workdir / "points" / "manifest.jsonl").write_text(lines)
    return workdir
