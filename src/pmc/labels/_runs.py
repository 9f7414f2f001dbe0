"""Speech runs: one speaker's activity and words with short gaps closed, and lookups over them.

The engine's working state (rule 1 of paper section 3.2): the other engine modules give each
run a role and classify its offset, then turn the runs into labels.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from enum import StrEnum

from pmc.corpus import Channel, Conversation, Word
from pmc.labels._types import Rule


class Role(StrEnum):
    """What a run is: speech of its speaker's turn, a backchannel, or a failed take."""

    SPEECH = "speech"
    BACKCHANNEL = "backchannel"
    TAKE = "take"


@dataclass
class Run:
    """One speaker's stretch of speech after gap closing (mutable only while the engine runs)."""

    speaker: Channel
    start: float
    end: float
    words: list[Word] = field(default_factory=list)
    role: Role = Role.SPEECH
    offset: Rule | None = None
    """How the offset at this run's end was classified."""
    confidence: float = 1.0
    floor_transfer_s: float | None = None
    next_start: float | None = None
    """The same speaker's next speech run after a pause."""
    pinned: bool = False
    """Part of its own speaker's turn for certain: never a backchannel or a failed take."""
    claimed: bool = False
    """The resumption after one of its speaker's pauses (this pass): never a failed take."""

    @property
    def duration(self) -> float:
        return self.end - self.start


def speech_runs(conversation: Conversation, channel: Channel, bridge_s: float) -> list[Run]:
    """Speech runs of one speaker: activity and word spans, with short gaps closed."""
    speaker = conversation.speaker(channel)
    spans = sorted(
        [(a.start_conv_s, a.end_conv_s) for a in speaker.activity]
        + [(w.start_conv_s, w.end_conv_s) for w in speaker.words]
    )
    runs: list[Run] = []
    for start, end in spans:
        if runs and start - runs[-1].end <= bridge_s:
            runs[-1].end = max(runs[-1].end, end)
        else:
            runs.append(Run(channel, start, end))
    starts = [r.start for r in runs]
    for word in speaker.words:
        middle = (word.start_conv_s + word.end_conv_s) / 2
        runs[bisect_right(starts, middle) - 1].words.append(word)
    return runs


class RunIndex:
    """Fast lookups over one speaker's runs (sorted, never overlapping)."""

    def __init__(self, runs: list[Run]) -> None:
        self.runs = runs
        self.starts = [r.start for r in runs]

    def last_starting_before(self, t: float) -> Run | None:
        i = bisect_left(self.starts, t) - 1
        return self.runs[i] if i >= 0 else None

    def covering(self, t: float) -> Run | None:
        run = self.last_starting_before(t)
        return run if run is not None and run.end > t else None

    def from_time(self, t: float, limit: float) -> list[Run]:
        """Runs still voiced after ``t`` that start before ``limit``."""
        i = max(bisect_right(self.starts, t) - 1, 0)
        out = []
        for run in self.runs[i:]:
            if run.start >= limit:
                break
            if run.end > t:
                out.append(run)
        return out

    def first_starting_after(self, t: float, role: Role | None = None) -> Run | None:
        for run in self.runs[bisect_right(self.starts, t) :]:
            if role is None or run.role is role:
                return run
        return None
