"""The protocol per point kind: what is streamed, when input ends, and when a rollout stops.

Paper section 3.4 and appendix C, with docs/architecture.md "Protocol"'s decisions:

- Pause: the active turn, the pause and the speaker resuming, then 3 s of silence frames, plus
  up to 8 s more while the system has produced no audio. Hosted endpointers stay on.
- Turn end and recall: the live audio up to the boundary; hosted systems then get an explicit
  end of input (their endpointer is off) and no further frames, everyone else silence frames.
  The rollout stops when the system has said words and its speech has been over for 2 s, when
  it has said nothing 8 s after the boundary, or at the 30 s cap after the boundary.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import Enum, StrEnum
from typing import Any

from pmc.clock import NS_PER_S
from pmc.harness._audit import LATE_BOUND_MS
from pmc.harness._inject import Injection
from pmc.harness._monitor import SpeechMonitor
from pmc.harness._streamer import Tick
from pmc.points import PointKind
from pmc.systems import Family


class StopReason(StrEnum):
    """Why a rollout's stream ended."""

    DRAINED = "drained"
    """A pause point's drain ran out."""
    REPLIED = "replied"
    """The system said words and then was silent for the set time."""
    NO_REPLY = "no_reply"
    """The system said nothing for the set time after the boundary."""
    CAP = "cap"
    """The cap after the boundary was reached."""


class Send(Enum):
    """What goes out at a frame deadline."""

    LIVE = "live"
    SILENCE = "silence"
    CLIP = "clip"
    """The person's talk over the reply (talk-over points, :mod:`pmc.harness._inject`)."""


@dataclass(frozen=True)
class ProtocolParams:
    """The protocol's numbers; ``run.json`` records them.

    From paper appendix C and docs/architecture.md "Protocol".
    """

    pause_drain_s: float = 3.0  # appendix C: 3 s of silence frames after the streamed pause
    pause_extra_s: float = 8.0  # appendix C: up to 8 s more while no audio has come
    reply_silence_s: float = 2.0  # docs/architecture.md "Protocol": words, then 2 s of silence
    no_reply_s: float = 8.0  # docs/architecture.md "Protocol": nothing said 8 s after the turn end
    cap_s: float = 30.0  # appendix C: every system is stopped at 30 s
    late_bound_ms: float = LATE_BOUND_MS

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProtocolParams:
        """Inverse of :meth:`to_dict`."""
        return cls(**{k: float(v) for k, v in data.items()})


def hosted_commit(
    kind: PointKind,
    family: Family,
    endpoints_talk_over: bool = False,
    endpoints_everywhere: bool = False,
) -> bool:
    """Whether the system gets an explicit end of input at the boundary.

    Hosted systems do at turn-end, recall and talk-over points (endpointer off); at pauses their
    endpointer is the policy under test, and other families find turn ends themselves. A hosted
    system whose endpointer cannot be turned on mid-session keeps it on at talk-over points
    (``endpoints_talk_over``, ``SystemAdapter.ENDPOINTS_TALK_OVER``) and is told nothing; one
    whose card puts its endpointer under test at every point (``endpoints_everywhere``,
    ``params.endpointing = "all"``) is told nothing anywhere.
    """
    if endpoints_everywhere or (kind.talks_over and endpoints_talk_over):
        return False
    return family is Family.HOSTED and kind is not PointKind.PAUSE


class Schedule:
    """Decides, at each frame deadline, whether to send live audio, silence, nothing, or stop.

    Args:
        kind: The point's kind.
        family: The system's family.
        live_frames: Frames of live audio (the point's live cut).
        frame_ns: One frame's duration.
        boundary_stream_s: The turn end or the question's end, on the stream clock.
        monitor: What the system has said so far.
        params: The protocol's numbers.
        audio_only: The system sends no text, so its speech alone counts as a reply.
        injection: At a talk-over point, the person's clip over the reply.
        endpoints_talk_over: The system's endpointer stays on at talk-over points
            (:func:`hosted_commit`).
        endpoints_everywhere: The system's endpointer decides at every point.
    """

    def __init__(
        self,
        kind: PointKind,
        family: Family,
        live_frames: int,
        frame_ns: int,
        boundary_stream_s: float,
        monitor: SpeechMonitor,
        params: ProtocolParams,
        audio_only: bool = False,
        injection: Injection | None = None,
        endpoints_talk_over: bool = False,
        endpoints_everywhere: bool = False,
    ) -> None:
        self.kind = kind
        self.audio_only = audio_only
        self.family = family
        self.live_frames = live_frames
        self.frame_ns = frame_ns
        self.boundary_ns = round(boundary_stream_s * NS_PER_S)
        self.monitor = monitor
        self.params = params
        self.commit = hosted_commit(kind, family, endpoints_talk_over, endpoints_everywhere)
        self.stop_reason: StopReason | None = None
        self.injection = injection

    def _elapsed_s(self, deadline_i: int) -> float:
        """Stream time at deadline ``i`` past the end of the live audio."""
        return (deadline_i + 1 - self.live_frames) * self.frame_ns / NS_PER_S

    def decide(self, i: int) -> Send | Tick:
        """What to do at deadline ``i``."""
        if i < self.live_frames:
            return Send.LIVE
        if self.kind is PointKind.PAUSE:
            return self._pause(i)
        return self._reply(i)

    def _pause(self, i: int) -> Send | Tick:
        after = self._elapsed_s(i)
        if after <= self.params.pause_drain_s:
            return Send.SILENCE
        limit = self.params.pause_drain_s + self.params.pause_extra_s
        if not self.monitor.any_audio and after <= limit:
            return Send.SILENCE
        self.stop_reason = StopReason.DRAINED
        return Tick.STOP

    def _reply(self, i: int) -> Send | Tick:
        now_ns = self.monitor.t0_ns + (i + 1) * self.frame_ns
        since_boundary = (now_ns - self.monitor.t0_ns - self.boundary_ns) / NS_PER_S
        silent = self.monitor.silent_for(now_ns)
        # Speech that ended before the boundary (a backchannel during the turn) is no reply.
        end = self.monitor.last_speech_end
        replied = (
            (self.monitor.words or self.audio_only)
            and end is not None
            and end > self.monitor.sample_at(self.monitor.t0_ns + self.boundary_ns)
        )
        clip = self._clip(i)
        if since_boundary >= self.params.cap_s:
            self.stop_reason = StopReason.CAP
        elif clip is not None:
            if clip is Send.CLIP:
                return clip
        elif replied and silent is not None and silent >= self.params.reply_silence_s:
            self.stop_reason = StopReason.REPLIED
        elif not replied and since_boundary >= self.params.no_reply_s:
            self.stop_reason = StopReason.NO_REPLY
        if self.stop_reason is not None:
            return Tick.STOP
        return Tick.SKIP if self.commit and not self.listening else Send.SILENCE

    @property
    def listening(self) -> bool:
        """A system told where input ended hears input again.

        Its reply started at a talk-over point: from then on it is sent silence and the clip
        (docs/architecture.md "Protocol").
        """
        return self.injection is not None and self.injection.at is not None

    def _clip(self, i: int) -> Send | None:
        """At a talk-over point: the clip at deadline ``i``, or silence until the rules may stop.

        The stream goes on while the clip plays and for the reply's silence after it, so that
        what the system does once the person has finished is heard. Before the reply starts
        (and where it never does) the usual rules apply.
        """
        injection = self.injection
        if injection is None or injection.place() is None or injection.end is None:
            return None
        size = self.frame_ns * self.monitor.rate // NS_PER_S
        first = i * size
        if injection.covers(first, size):
            return Send.CLIP
        after_s = (first - injection.end) / self.monitor.rate
        return Send.SILENCE if after_s < self.params.reply_silence_s else None
