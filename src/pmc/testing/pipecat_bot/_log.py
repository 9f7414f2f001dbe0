"""The bot's JSON-lines log: what its own Pipecat pipeline did, per call, on the monotonic clock.

One line per event: ``{"event": ..., "call": n, "stream_sid": ..., "ns": ...}``. ``ns`` is
``time.monotonic_ns()`` in the bot's process, the clock pmc's harness uses on the same machine,
so the two compare directly.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any


class BotEventKind(StrEnum):
    """What the bot logged."""

    CALL_START = "call_start"
    """The Twilio handshake was read (``connected`` and ``start``), or a protobuf call accepted."""
    TURN_START = "turn_start"
    """The user-turn start strategy (Silero VAD) began the caller's turn."""
    TURN_END = "turn_end"
    """The stop strategy (Smart Turn v3.2) ended the caller's turn."""
    FIRST_AUDIO = "first_audio"
    """A reply's first audio (``media`` or ``AudioRawFrame``), stamped just before it was sent."""
    CLEAR = "clear"
    """A ``clear`` (Twilio) or ``InterruptionFrame`` (protobuf), stamped just before it was sent."""
    AUDIO_AFTER_CLEAR = "audio_after_clear"
    """A piece of an interrupted reply that still left after its clear, stamped just before it
    was sent: Pipecat's output task can race the interruption when the processor is busy."""
    CALL_END = "call_end"
    """The caller hung up."""


@dataclass(frozen=True)
class BotEvent:
    """One line of the log."""

    event: BotEventKind
    call: int
    stream_sid: str
    ns: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "event": str(self.event),
            "call": self.call,
            "stream_sid": self.stream_sid,
            "ns": self.ns,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BotEvent:
        return cls(
            BotEventKind(data["event"]), int(data["call"]), str(data["stream_sid"]), int(data["ns"])
        )


class BotLog:
    """Appends events to the log file, one flushed line each (calls may share the file)."""

    def __init__(self, path: Path) -> None:
        self._handle = path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, event: BotEventKind, call: int, stream_sid: str, ns: int | None = None) -> None:
        record = BotEvent(event, call, stream_sid, time.monotonic_ns() if ns is None else ns)
        with self._lock:
            self._handle.write(json.dumps(record.to_dict()) + "\n")
            self._handle.flush()

    def close(self) -> None:
        self._handle.close()


def read_log(path: Path) -> list[BotEvent]:
    """Every event the bot logged, in the order written."""
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [BotEvent.from_dict(json.loads(line)) for line in lines if line.strip()]
