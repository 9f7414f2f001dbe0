"""The duplex environment: its Python, the server settings, a free port, the tiny models.

The Moshi servers need PyTorch and moshi, which live in their own environment
(``.venv-duplex``, built by ``make``); from pmc's own environment they run as subprocesses of
that environment's Python.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

from pmc.duplex_server import DUPLEX_VENV, PYTHON_ENV, environment_python
from pmc.errors import PmcError

HOST = "127.0.0.1"
START_TIMEOUT_S = 120.0
"""A server loads its model before it listens: about 2 s alone, longer on busy cores."""
STOP_TIMEOUT_S = 10.0
SERVER_ENV = {
    "NO_TORCH_COMPILE": "1",  # moshi compiles lazily on the first step otherwise (3-14 s, gcc)
    "HF_HUB_OFFLINE": "1",  # a missing local file fails at once instead of retrying the hub
    "PMC_TORCH_THREADS": "1",  # two threads on two busy cores spike to hundreds of ms a step
}


BUILDING_ENV = "PMC_DUPLEX_BUILDING"
"""Names the file where a build of the environment under way will write its exit status:
``make test`` builds it beside the tests (tools/run-tests), and those that need it wait."""
BUILD_WAIT_S = 900.0
"""How long to wait for that build: it takes about 30 s, minutes on a slow network."""


def duplex_python() -> Path:
    """The duplex environment's Python (:func:`pmc.duplex_server.environment_python`), checked.

    While a build of the environment is under way (:data:`BUILDING_ENV`), it waits for it.
    """
    if not os.environ.get(PYTHON_ENV):
        _wait_for_build()
    path = environment_python()
    if not path.exists():
        raise PmcError(f"{path}: no duplex environment; build it with `make duplex-env`")
    return path


def _wait_for_build() -> None:
    """Return once the build named by :data:`BUILDING_ENV` (if any) has succeeded."""
    status_file = os.environ.get(BUILDING_ENV)
    if not status_file:
        return
    status = Path(status_file)
    deadline = time.monotonic() + BUILD_WAIT_S
    while not status.exists():
        if time.monotonic() > deadline:
            raise PmcError(f"{status}: the duplex environment's build wrote no status in time")
        time.sleep(0.5)
    code = status.read_text().strip()
    if code != "0":
        log = status.with_suffix(".log")
        raise PmcError(f"{DUPLEX_VENV}: its build failed (exit {code}); see {log}")


def free_port() -> int:
    """A TCP port free on the loopback interface right now."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def build_tiny_models(out: Path) -> Path:
    """Build the tiny random-weight models into ``out`` (in the duplex environment)."""
    subprocess.run(
        [str(duplex_python()), "-m", "pmc.duplex_server.tiny", str(out)],
        check=True,
        capture_output=True,
        env=os.environ | SERVER_ENV,
    )
    return out


def model_args(models: Path, stock: bool) -> list[str]:
    """Command-line arguments that load the tiny models from ``models``."""
    config = "--config-path" if stock else "--config"
    return [
        config,
        str(models / "config.json"),
        "--moshi-weight",
        str(models / "moshi.safetensors"),
        "--mimi-weight",
        str(models / "mimi.safetensors"),
        "--tokenizer",
        str(models / "tok.model"),
    ]
