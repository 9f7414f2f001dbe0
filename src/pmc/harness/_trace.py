"""The trace of one rollout: every input frame's timing and every output message, as received.

The recorder stamps a message with the clock the moment it is handed over by the transport,
before anything parses it (the reference harness stamped on dequeue, which inflated latencies
under load). A rollout's folder holds ``trace.json``, ``played.flac`` (the reconstructed played
track) and ``output.wav`` (the raw output audio, chunk after chunk, as received).
"""

from __future__ import annotations

import io as _io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from pmc import io
from pmc.audio import SAMPLE_RATE, FloatArray, wav_bytes
from pmc.clock import Clock
from pmc.harness._audit import LATE_BOUND_MS, TimingAudit, audit
from pmc.harness._playback import Chunk, Played, reconstruct
from pmc.harness._record import ProtocolRecord
from pmc.harness._streamer import FrameTiming
from pmc.io import schema_version
from pmc.systems import LATE_MS, EventKind, SystemEvent

TRACE_SCHEMA_VERSION = 1

PLAYED_FILE = "played.flac"
HEARD_FILE = "heard.flac"
"""What the system heard, frame after frame as sent, where the run changed it (conditions)."""
"""A rollout's played track: its output placed on the stream clock as a client plays it."""


@dataclass(frozen=True)
class OutputRecord:
    """One output message in the trace (its audio lives in ``output.wav``)."""

    kind: EventKind
    arrival_ns: int
    samples: int = 0
    """Audio samples it carried; they follow the previous records' samples in output.wav."""
    text: str = ""
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "kind": self.kind.value,
            "arrival_ns": self.arrival_ns,
            "samples": self.samples,
            "text": self.text,
            "detail": self.detail,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OutputRecord:
        """Inverse of :meth:`to_dict`."""
        return cls(
            EventKind(data["kind"]),
            int(data["arrival_ns"]),
            int(data.get("samples", 0)),
            str(data.get("text", "")),
            dict(data.get("detail", {})),
        )


@dataclass(frozen=True)
class RolloutTrace:
    """Everything observed in one rollout, on the harness clock (nanoseconds).

    Attributes:
        point_id: The point it ran.
        system: The system card's name.
        rollout: Which rollout of the point (0 is the scored one).
        t0_ns: The stream clock's origin: the instant the first live sample was spoken.
        inputs: When each input frame was due and sent.
        outputs: Every message received, in arrival order.
        audit: The timing audit.
        card: The system card as it was.
        protocol: What the protocol did (None for a trace recorded outside a rollout, such as
            the harness benchmark's; ``trace.json`` then holds an empty ``protocol``).
    """

    point_id: str
    system: str
    rollout: int
    t0_ns: int
    inputs: tuple[FrameTiming, ...]
    outputs: tuple[OutputRecord, ...]
    audit: TimingAudit
    card: dict[str, Any] = field(default_factory=dict)
    protocol: ProtocolRecord | None = None
    schema_version: int = TRACE_SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form, with the schema version."""
        return {
            "schema_version": self.schema_version,
            "point_id": self.point_id,
            "system": self.system,
            "rollout": self.rollout,
            "t0_ns": self.t0_ns,
            "inputs": [[t.index, t.scheduled_ns, t.sent_ns] for t in self.inputs],
            "outputs": [o.to_dict() for o in self.outputs],
            "audit": self.audit.to_dict(),
            "card": self.card,
            "protocol": {} if self.protocol is None else self.protocol.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RolloutTrace:
        """Inverse of :meth:`to_dict`; refuses a schema version it does not know."""
        version = schema_version(data, TRACE_SCHEMA_VERSION, "rollout trace")
        return cls(
            point_id=str(data["point_id"]),
            system=str(data["system"]),
            rollout=int(data["rollout"]),
            t0_ns=int(data["t0_ns"]),
            inputs=tuple(FrameTiming(int(i), int(s), int(a)) for i, s, a in data["inputs"]),
            outputs=tuple(OutputRecord.from_dict(o) for o in data["outputs"]),
            audit=TimingAudit.from_dict(data["audit"]),
            card=dict(data.get("card", {})),
            protocol=ProtocolRecord.of_trace(data),
            schema_version=version,
        )


class TraceRecorder:
    """Collects a rollout's messages, stamping each on receipt."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._records: list[OutputRecord] = []
        self._audio: list[FloatArray] = []
        self._played: tuple[int, FloatArray] | None = None

    def received(self, event: SystemEvent) -> None:
        """Keep one event; its ``arrival_ns`` must be the receipt stamp (see :meth:`stamp`)."""
        self._records.append(
            OutputRecord(event.kind, event.arrival_ns, len(event.samples), event.text, event.detail)
        )
        if len(event.samples):
            self._audio.append(event.samples)

    def stamp(self) -> int:
        """The receipt instant; transports call this first, before parsing a message."""
        return self.clock.now_ns()

    def chunks(self) -> list[Chunk]:
        """The output audio as it arrived, for playback reconstruction."""
        audio_records = [r for r in self._records if r.samples]
        return [Chunk(r.arrival_ns, a) for r, a in zip(audio_records, self._audio, strict=True)]

    def interruptions(self) -> list[int]:
        """When the system stopped its own speech."""
        return [r.arrival_ns for r in self._records if r.kind is EventKind.INTERRUPTED]

    def played_so_far(self, t0_ns: int) -> FloatArray:
        """The played track as far as the output has arrived (rebuilt only when more came).

        Every sample before the present is final: an interruption yet to come cuts only what
        has not played.
        """
        if self._played is None or self._played[0] != len(self._records):
            track = reconstruct(self.chunks(), t0_ns, self.interruptions()).track
            self._played = (len(self._records), track)
        return self._played[1]

    def finish(
        self,
        point_id: str,
        system: str,
        rollout: int,
        t0_ns: int,
        inputs: list[FrameTiming],
        card: dict[str, Any],
        length_s: float | None = None,
        protocol: ProtocolRecord | None = None,
        bound_ms: float = LATE_BOUND_MS,
    ) -> tuple[RolloutTrace, Played]:
        """The trace and the played track, once the rollout has ended.

        With ``length_s`` the played track is exactly that long: what would have played after
        the stream stopped is not heard.
        """
        played = reconstruct(self.chunks(), t0_ns, self.interruptions(), length_s)
        if length_s is not None:
            n = round(length_s * SAMPLE_RATE)
            played = Played(played.track[:n], played.dropped_samples, played.backlog_max_ms)
        trace = RolloutTrace(
            point_id,
            system,
            rollout,
            t0_ns,
            tuple(inputs),
            tuple(self._records),
            audit(inputs, played.backlog_max_ms, bound_ms, self.requests_late_ms()),
            card,
            protocol,
        )
        return trace, played

    def requests_late_ms(self) -> list[float]:
        """How late each message the adapter scheduled itself went out (its signals say)."""
        return [
            float(r.detail[LATE_MS])
            for r in self._records
            if r.kind is EventKind.SIGNAL and LATE_MS in r.detail
        ]

    def raw_audio(self) -> FloatArray:
        """All output audio back to back, as received."""
        return np.concatenate(self._audio) if self._audio else np.zeros(0, dtype=np.float32)


def write_rollout(
    folder: Path,
    trace: RolloutTrace,
    played: Played,
    raw: FloatArray,
    heard: FloatArray | None = None,
) -> None:
    """Write a rollout's files atomically; ``trace.json`` last, so its presence means done.

    ``heard``: what the system heard (``heard.flac``), where the run changed it.
    """
    io.write_bytes(folder / PLAYED_FILE, _flac(played.track))
    if heard is not None:
        io.write_bytes(folder / HEARD_FILE, _flac(heard))
    io.write_bytes(folder / "output.wav", wav_bytes(raw, SAMPLE_RATE))
    io.write_json(folder / "trace.json", trace.to_dict())


def _flac(track: FloatArray) -> bytes:
    buffer = _io.BytesIO()
    sf.write(buffer, track, SAMPLE_RATE, format="FLAC", subtype="PCM_16")
    return buffer.getvalue()


def read_rollout(folder: Path) -> tuple[RolloutTrace, FloatArray]:
    """A rollout's trace and played track."""
    trace = RolloutTrace.from_dict(io.read_json(folder / "trace.json"))
    track, _ = sf.read(folder / PLAYED_FILE, dtype="float32")
    return trace, np.asarray(track, dtype=np.float32)
