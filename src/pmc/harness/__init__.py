"""Harness stage: real-time streaming of points to systems, and exact records of what they did.

The protocol per point kind (``_protocol``), one rollout (``_rollout``), and the resumable
run over every system and point (``_stage``), on real or virtual clocks, backing off and
stepping a card's concurrency down when its server says so (``_retry``). A run's folder is
:class:`Run` (``_run``): the record and rollouts every later stage reads.
"""

from pmc.harness._audit import LATE_BOUND_MS, TimingAudit, audit
from pmc.harness._backoff import Backoff
from pmc.harness._clock_kind import ClockKind
from pmc.harness._conditions import condition_seed
from pmc.harness._history import HistorySource, history_donor, with_history
from pmc.harness._inputs import live_for, preload_for, rollout_seed
from pmc.harness._monitor import SpeechMonitor
from pmc.harness._playback import Chunk, Played, reconstruct
from pmc.harness._protocol import ProtocolParams, Schedule, Send, StopReason, hosted_commit
from pmc.harness._record import ProtocolRecord
from pmc.harness._rollout import RolloutJob, RolloutResult, run_rollout
from pmc.harness._run import (
    ERROR_FILE,
    RUN_FILE,
    SCORES_DIR,
    TRACE_FILE,
    RolloutEntry,
    RolloutState,
    Run,
    RunRecord,
    SystemEntry,
)
from pmc.harness._settings import RunSettings, clock_for, default_run_id, rollout_dir, runs_dir
from pmc.harness._stage import run_rollouts
from pmc.harness._streamer import FrameTiming, Tick, frame_ns, stream_frames, stream_until
from pmc.harness._tally import Observed, SystemTally
from pmc.harness._trace import (
    HEARD_FILE,
    PLAYED_FILE,
    TRACE_SCHEMA_VERSION,
    OutputRecord,
    RolloutTrace,
    TraceRecorder,
    read_rollout,
    write_rollout,
)

__all__ = [
    "ERROR_FILE",
    "HEARD_FILE",
    "LATE_BOUND_MS",
    "PLAYED_FILE",
    "RUN_FILE",
    "SCORES_DIR",
    "TRACE_FILE",
    "TRACE_SCHEMA_VERSION",
    "Backoff",
    "Chunk",
    "ClockKind",
    "FrameTiming",
    "HistorySource",
    "Observed",
    "OutputRecord",
    "Played",
    "ProtocolParams",
    "ProtocolRecord",
    "RolloutEntry",
    "RolloutJob",
    "RolloutResult",
    "RolloutState",
    "RolloutTrace",
    "Run",
    "RunRecord",
    "RunSettings",
    "Schedule",
    "Send",
    "SpeechMonitor",
    "StopReason",
    "SystemEntry",
    "SystemTally",
    "Tick",
    "TimingAudit",
    "TraceRecorder",
    "audit",
    "clock_for",
    "condition_seed",
    "default_run_id",
    "frame_ns",
    "history_donor",
    "hosted_commit",
    "live_for",
    "preload_for",
    "read_rollout",
    "reconstruct",
    "rollout_dir",
    "rollout_seed",
    "run_rollout",
    "run_rollouts",
    "runs_dir",
    "stream_frames",
    "stream_until",
    "with_history",
    "write_rollout",
]
