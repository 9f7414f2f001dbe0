"""What the protocol did in one rollout: the ``protocol`` block of its ``trace.json``.

Scoring and the report read a rollout's boundaries, stop and end of input from here, so the
trace alone says how the rollout went, whatever the points or the protocol's numbers are now.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pmc.harness._clock_kind import ClockKind
from pmc.harness._protocol import ProtocolParams, StopReason
from pmc.points import PointKind
from pmc.systems import Family

TALK_OVER = ("reply_onset_stream_s", "clip_stream_s", "clip_s", "listen_stream_s")
"""The record's fields that only talk-over points set."""


@dataclass(frozen=True)
class ProtocolRecord:
    """How one rollout was run and how it ended, on the stream clock (seconds).

    Attributes:
        kind: The point's kind.
        family: The system's family.
        adapter_version: The adapter's ``VERSION``.
        clock: The clock the rollout ran on (real or virtual).
        seed: The rollout's seed.
        live_s: How much live audio was streamed (a hosted system told where input ends hears
            it up to the boundary only).
        boundary_stream_s: The pause start, turn end or question end.
        boundary_end_stream_s: The pause end (the boundary itself for other kinds).
        stop_reason: Why the stream stopped.
        stop_stream_s: When it stopped.
        end_of_input_stream_s: When the system was told input had ended (None: it was not).
        reference_point_id: The point whose reply a reference system was given (None: none).
        params: The protocol's numbers.
        reply_onset_stream_s: Talk-over points: where the system's reply began on the played
            track (None: it never did, or not a talk-over point).
        clip_stream_s: Talk-over points: where the person's clip began (the reply's onset plus
            the point's offset).
        clip_s: Talk-over points: the clip's length.
        listen_stream_s: Talk-over points: when a system told where input ended was made to
            hear again (:meth:`pmc.systems.SystemAdapter.listen`), once its reply had started.
    """

    kind: PointKind
    family: Family
    adapter_version: str
    clock: ClockKind
    seed: int
    live_s: float
    boundary_stream_s: float
    boundary_end_stream_s: float
    stop_reason: StopReason | None
    stop_stream_s: float
    end_of_input_stream_s: float | None
    reference_point_id: str | None
    params: ProtocolParams
    reply_onset_stream_s: float | None = None
    clip_stream_s: float | None = None
    clip_s: float | None = None
    listen_stream_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form; the talk-over fields only where set."""
        talk_over = {
            name: getattr(self, name) for name in TALK_OVER if getattr(self, name) is not None
        }
        return {
            "kind": self.kind.value,
            "family": self.family.value,
            "adapter_version": self.adapter_version,
            "clock": self.clock.value,
            "seed": self.seed,
            "live_s": self.live_s,
            "boundary_stream_s": self.boundary_stream_s,
            "boundary_end_stream_s": self.boundary_end_stream_s,
            "stop_reason": None if self.stop_reason is None else self.stop_reason.value,
            "stop_stream_s": self.stop_stream_s,
            "end_of_input_stream_s": self.end_of_input_stream_s,
            "reference_point_id": self.reference_point_id,
            "params": self.params.to_dict(),
            **talk_over,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProtocolRecord:
        """Inverse of :meth:`to_dict`."""
        stop = data.get("stop_reason")
        end_of_input = data.get("end_of_input_stream_s")
        reference = data.get("reference_point_id")
        return cls(
            kind=PointKind(data["kind"]),
            family=Family(data["family"]),
            adapter_version=str(data["adapter_version"]),
            clock=ClockKind(data["clock"]),
            seed=int(data["seed"]),
            live_s=float(data["live_s"]),
            boundary_stream_s=float(data["boundary_stream_s"]),
            boundary_end_stream_s=float(data["boundary_end_stream_s"]),
            stop_reason=None if stop is None else StopReason(stop),
            stop_stream_s=float(data["stop_stream_s"]),
            end_of_input_stream_s=None if end_of_input is None else float(end_of_input),
            reference_point_id=None if reference is None else str(reference),
            params=ProtocolParams.from_dict(data["params"]),
            **{name: float(data[name]) for name in TALK_OVER if data.get(name) is not None},
        )

    @classmethod
    def of_trace(cls, trace: dict[str, Any]) -> ProtocolRecord | None:
        """The record in a ``trace.json``'s data; None where it holds none (not a rollout's)."""
        data = trace.get("protocol")
        return cls.from_dict(data) if data else None
