"""The real Moshi servers on CPU, each a subprocess of the duplex environment's Python."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pmc.cpu import default_slices
from pmc.errors import PmcError
from pmc.testing.duplex_server._env import (
    HOST,
    SERVER_ENV,
    START_TIMEOUT_S,
    STOP_TIMEOUT_S,
    duplex_python,
    free_port,
    model_args,
)


@dataclass(frozen=True)
class Served:
    """A running server: its base URL and its log file."""

    base: str
    log: Path


@contextmanager
def _subprocess_server(args: list[str], port: int, log: Path) -> Iterator[Served]:
    """Start ``args`` in the duplex environment; yield once ``port`` accepts connections."""
    with log.open("wb") as sink:
        with default_slices():  # a real-time server, whatever slices the test asked for
            process = subprocess.Popen(
                [str(duplex_python()), *args],
                stdout=sink,
                stderr=subprocess.STDOUT,
                env=os.environ | SERVER_ENV,
            )
        try:
            deadline = time.monotonic() + START_TIMEOUT_S
            while True:
                if process.poll() is not None:
                    raise PmcError(f"server exited ({process.returncode}): {log.read_text()}")
                with contextlib.suppress(OSError), socket.create_connection((HOST, port), 0.5):
                    break
                if time.monotonic() > deadline:
                    raise PmcError(f"server did not listen in {START_TIMEOUT_S:.0f} s: {log}")
                time.sleep(0.1)
            yield Served(f"ws://{HOST}:{port}", log)
        finally:
            process.terminate()
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextmanager
def stock_server(models: Path, log: Path) -> Iterator[Served]:
    """The unmodified ``moshi.server`` on CPU (through :mod:`pmc.duplex_server.stock`)."""
    port = free_port()
    args = ["-m", "pmc.duplex_server.stock", "--device", "cpu", "--host", HOST, "--port", str(port)]
    args += ["--static", "none", "--hf-repo", "local/none", *model_args(models, stock=True)]
    with _subprocess_server(args, port, log) as served:
        yield served


@contextmanager
def duplex_server(
    models: Path, log: Path, instances: int = 1, max_history_frames: int | None = None
) -> Iterator[Served]:
    """``pmc serve-duplex`` (``python -m pmc.duplex_server serve``) on CPU."""
    port = free_port()
    args = ["-m", "pmc.duplex_server", "serve", "--device", "cpu", "--host", HOST]
    args += ["--port", str(port)]
    args += ["--instances", str(instances), *model_args(models, stock=False)]
    if max_history_frames is not None:
        args += ["--max-history-frames", str(max_history_frames)]
    with _subprocess_server(args, port, log) as served:
        yield served
