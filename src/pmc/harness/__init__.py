"""Harness stage: real-time streaming of points to systems, and exact records of what they did.

Built so far: the clocks, the frame streamer, playback reconstruction and the timing audit.
"""

from pmc.harness._audit import LATE_BOUND_MS, TimingAudit, audit
from pmc.harness._clock import NS_PER_S, Clock, RealClock, VirtualClock, responsive_interpreter
from pmc.harness._playback import Chunk, Played, reconstruct
from pmc.harness._streamer import FrameTiming, frame_ns, stream_frames

__all__ = [
    "LATE_BOUND_MS",
    "NS_PER_S",
    "Chunk",
    "Clock",
    "FrameTiming",
    "Played",
    "RealClock",
    "TimingAudit",
    "VirtualClock",
    "audit",
    "frame_ns",
    "reconstruct",
    "responsive_interpreter",
    "stream_frames",
]
