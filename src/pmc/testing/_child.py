"""A fake served from a child process: its URL while it runs, its records once it stops.

A fake in a process of its own takes no interpreter time from the harness it is measured by, as
a server on another machine would not. The child prints its URL on its first line, serves until
its standard input closes, then prints its records as one JSON document (or nothing, when
it keeps none).
"""

from __future__ import annotations

import json
import select
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pmc.cpu import default_slices


@dataclass
class Child:
    """A running child fake: its URL, and its records once it has stopped."""

    url: str
    pid: int
    """The child's process id (to measure its CPU use)."""
    records: list[dict[str, Any]] = field(default_factory=list)


@contextmanager
def serve_in_child(module: str, spec: str, timeout_s: float) -> Iterator[Child]:
    """Run ``python -m module spec`` until the block ends; then read what it recorded.

    ``timeout_s`` bounds both its start (until it prints its URL) and its stop.
    """
    with default_slices():  # a real-time fake, whatever slices the test asked for
        process = subprocess.Popen(
            [sys.executable, "-m", module, spec],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
    stdin, stdout = process.stdin, process.stdout
    if stdin is None or stdout is None:  # never: both pipes were asked for
        raise RuntimeError("no pipes to the fake's process")
    try:
        ready, _, _ = select.select([stdout], [], [], timeout_s)
        url = stdout.readline().strip() if ready else ""
        if not url.startswith("ws://"):
            raise RuntimeError(f"the fake did not start (exit status {process.poll()})")
        child = Child(url, process.pid)
        yield child
        stdin.close()  # the child stops serving, prints its records and exits
        report = stdout.read()
        process.wait(timeout_s)
        child.records = json.loads(report) if report.strip() else []
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        stdout.close()
