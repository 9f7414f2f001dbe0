"""Harness stage: real-time streaming of points to systems, and exact records of what they did.

Built so far: the clocks, the frame streamer, playback reconstruction, the timing audit and
the trace recorder.
"""

from pmc.clock import NS_PER_S, Clock, RealClock, VirtualClock, responsive_interpreter
from pmc.harness._audit import LATE_BOUND_MS, TimingAudit, audit
from pmc.harness._playback import Chunk, Played, reconstruct
from pmc.harness._streamer import FrameTiming, frame_ns, stream_frames
from pmc.harness._trace import (
    TRACE_SCHEMA_VERSION,
    OutputRecord,
    RolloutTrace,
    TraceRecorder,
    read_rollout,
    write_rollout,
)

__all__ = [
    "LATE_BOUND_MS",
    "NS_PER_S",
    "TRACE_SCHEMA_VERSION",
    "Chunk",
    "Clock",
    "FrameTiming",
    "OutputRecord",
    "Played",
    "RealClock",
    "RolloutTrace",
    "TimingAudit",
    "TraceRecorder",
    "VirtualClock",
    "audit",
    "frame_ns",
    "read_rollout",
    "reconstruct",
    "responsive_interpreter",
    "stream_frames",
    "write_rollout",
]
