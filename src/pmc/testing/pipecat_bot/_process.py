"""Starting the bot as a child process of this Python, on a free loopback port, and stopping it."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from pmc.cpu import default_slices


class Wire(StrEnum):
    """Which serializer a call speaks: the route it connects to."""

    TWILIO = "twilio"
    """Twilio Media Streams (JSON, 8 kHz mu-law), Pipecat's ``TwilioFrameSerializer``."""
    PROTOBUF = "protobuf"
    """Pipecat's own protobuf frames (16 kHz PCM16), its ``ProtobufFrameSerializer``."""


HOST = "127.0.0.1"
PATHS = {Wire.TWILIO: "/media-stream", Wire.PROTOBUF: "/ws"}
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class RunningBot:
    """A bot that listens: its URL for each serializer and the JSON-lines log it writes."""

    urls: dict[Wire, str]
    log: Path

    @property
    def url(self) -> str:
        """The Twilio Media Streams URL."""
        return self.urls[Wire.TWILIO]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def _listening(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=0.2):
            return True
    except OSError:
        return False


@contextmanager
def pipecat_bot(log: Path, port: int | None = None) -> Iterator[RunningBot]:
    """Run ``python -m pmc.testing.pipecat_bot`` until the block ends; yields its URLs and log.

    Waits until the bot accepts connections (it voices its reply and loads Pipecat first).
    """
    port = port or free_port()
    command = [sys.executable, "-m", "pmc.testing.pipecat_bot", "--port", str(port)]
    with default_slices():  # a real-time bot, whatever slices the test asked for
        process = subprocess.Popen([*command, "--log", str(log)])
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _listening(port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the Pipecat bot did not start (exit status {process.poll()})")
            time.sleep(0.1)
        yield RunningBot({wire: f"ws://{HOST}:{port}{path}" for wire, path in PATHS.items()}, log)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
