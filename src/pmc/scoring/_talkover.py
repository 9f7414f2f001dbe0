"""Overlap between a system and the person: who talks over whom, and who stops.

See docs/architecture.md "Metrics". Every time is on the stream clock. A system *talks over*
the person when a stretch of its talk begins while the person's live turn is going (outside the
pause under test): an agent interruption. A system that was talking when the person came in
*yields* when its talk ends soon after and stays ended.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from pmc.audio import SAMPLE_RATE, FloatArray
from pmc.gate import TALK_QUIET_S, GateParams, refine_end
from pmc.scoring._evidence import Evidence, talk_stretches

YIELD_WINDOW_S = 2.0
"""A yield ends the system's talk within 2 s of the person's onset. People talked over drop out
within a syllable or two (Schegloff 2000); the demo's longest scripted yield is 1.5 s; and a
hosted API hears the person only some 0.3 to 0.5 s into their speech before the client stops
its playback. A system still talking 2 s in has not yielded."""
YIELD_QUIET_S = TALK_QUIET_S
"""... and stays ended for 1 s (:data:`pmc.gate.TALK_QUIET_S`): talk resumed within a second is
the same talk after a breath, not a yield followed by a new turn."""

END_MARGIN_S = 0.05
"""Talk whose gate interval closes this near the track's end ran out with the track: the gate's
20 ms windows close an interval up to two windows early."""

Spans = Sequence[tuple[float, float]]
"""Stretches of the stream clock, start and end in seconds."""


@dataclass(frozen=True)
class TalkOver:
    """A system that started talking while the person's live turn was going.

    Attributes:
        onset_s: Where the first such stretch of talk began.
        duration_s: How long its talk overlapped the person's turn, all such stretches together.
        stretches: How many stretches of talk began while the person was speaking.
        spans: Where its talk overlapped the person's turn (for the rollout's timeline).
    """

    onset_s: float
    duration_s: float
    stretches: int
    spans: tuple[tuple[float, float], ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {**asdict(self), "spans": [list(s) for s in self.spans]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TalkOver:
        """Inverse of :meth:`to_dict`."""
        spans = tuple((float(a), float(b)) for a, b in data["spans"])
        return cls(float(data["onset_s"]), float(data["duration_s"]), int(data["stretches"]), spans)


def _inside(t: float, spans: Spans) -> bool:
    return any(a <= t < b for a, b in spans)


def talk_over(found: Sequence[Evidence], person: Spans) -> TalkOver | None:
    """The system's talk that began inside ``person`` (the live turn), if any.

    Talk under way before the person's turn went on (at a pause, talk that began in the pause
    and ran into the resumption) is not talking over them: that is whether it yielded.
    """
    starting = [r for r in talk_stretches(found) if _inside(r.onset_stream_s, person)]
    if not starting:
        return None
    overlaps = []
    for stretch in starting:
        for a, b in person:
            lo, hi = max(a, stretch.onset_stream_s), min(b, stretch.end_stream_s)
            if hi > lo:
                overlaps.append((round(lo, 4), round(hi, 4)))
    return TalkOver(
        round(starting[0].onset_stream_s, 4),
        round(sum(b - a for a, b in overlaps), 4),
        len(starting),
        tuple(overlaps),
    )


@dataclass(frozen=True)
class YieldScore:
    """What a system that was talking did when the person came in.

    Attributes:
        onset_s: Where the person came in.
        yielded: Its talk ended within :data:`YIELD_WINDOW_S` and stayed ended for
            :data:`YIELD_QUIET_S` (or to the end of the track).
        stop_latency_s: From the person's onset to the end of its talk (talk resumed within
            :data:`YIELD_QUIET_S` is the same talk); None when it talked to the track's end.
        spoke_again: It talked again after it had stopped.
    """

    onset_s: float
    yielded: bool
    stop_latency_s: float | None
    spoke_again: bool

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> YieldScore:
        """Inverse of :meth:`to_dict`."""
        return cls(**data)


def yield_to(
    found: Sequence[Evidence], onset_s: float, track_end_s: float, words_only: bool = True
) -> YieldScore | None:
    """Whether the system's talk under way at ``onset_s`` stopped for the person (None if none).

    ``words_only=False`` counts any speech the gate hears as talk, words or not.
    """
    runs = talk_stretches(found, YIELD_QUIET_S, words_only)
    current = next((r for r in runs if r.onset_stream_s <= onset_s < r.end_stream_s), None)
    if current is None:
        return None
    stop = current.end_stream_s
    ran_out = stop >= track_end_s - END_MARGIN_S
    latency = None if ran_out else round(stop - onset_s, 4)
    again = any(r.onset_stream_s > stop for r in runs)
    yielded = latency is not None and latency <= YIELD_WINDOW_S
    return YieldScore(round(onset_s, 4), yielded, latency, again)


@dataclass(frozen=True)
class ClipScore:
    """What a system did when the person's clip came over its reply (talk-over points).

    Attributes:
        reached: The clip was played: the system had started a reply (otherwise the rollout
            ended with no reply, and the point was not reached).
        onset_s: Where the clip began.
        clip_end_s: Where it ended.
        talking: The system was still talking at the clip's onset (a reply over by then gives
            the clip nothing to come over).
        yielded: Its talk ended within :data:`YIELD_WINDOW_S` and stayed ended for
            :data:`YIELD_QUIET_S`: at a barge-in what the person did; at a backchannel a false
            yield.
        stop_latency_s: From the clip's onset to the end of its talk; None when it talked to
            the track's end.
        talk_over_s: How long it talked over the clip: from the onset to the earlier of the
            end of its talk and the clip's end.
        spoke_again: It talked again after it had stopped.
        said_after: Its words that began after the clip ended (talk it went on with, or took up
            again).
        person_s: The person's own: their yield latency (barge-in) or how long they kept
            talking (backchannel).
        after_token_f1: Token F1 of ``said_after`` against what the person said next (the
            point's ``person_next_text``), as a reply's at a turn end; None where either is
            empty.
        after_cosine: Their embedding cosine, likewise.
    """

    reached: bool
    onset_s: float | None = None
    clip_end_s: float | None = None
    talking: bool = False
    yielded: bool = False
    stop_latency_s: float | None = None
    talk_over_s: float | None = None
    spoke_again: bool = False
    said_after: str = ""
    person_s: float | None = None
    after_token_f1: float | None = None
    after_cosine: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClipScore:
        """Inverse of :meth:`to_dict`."""
        return cls(**data)


def clip_score(
    found: Sequence[Evidence],
    onset_s: float | None,
    clip_s: float | None,
    track: FloatArray,
    gate: GateParams,
    person_s: float | None,
) -> ClipScore:
    """Score the system's talk around the clip that began at ``onset_s`` (None: never played).

    Talk is any speech the gate hears, words or not: a system that laughs or murmurs over the
    person has not stopped for them. Where it stopped is refined from the gate's window edge to
    the sample (:func:`pmc.gate.refine_end`), as onsets are.
    """
    track_end_s = len(track) / SAMPLE_RATE
    if onset_s is None or clip_s is None:
        return ClipScore(False, person_s=person_s)
    end = onset_s + clip_s
    base = ClipScore(True, round(onset_s, 4), round(end, 4), person_s=person_s)
    after = " ".join(w.text for e in found for w in e.words if w.start_s >= end)
    held = yield_to(found, onset_s, track_end_s, words_only=False)
    if held is None:
        return replace(base, said_after=after)
    if held.stop_latency_s is not None:
        edge = round((onset_s + held.stop_latency_s) * SAMPLE_RATE)
        latency = round(refine_end(track, edge, gate, SAMPLE_RATE) / SAMPLE_RATE - onset_s, 4)
        held = replace(held, stop_latency_s=latency, yielded=latency <= YIELD_WINDOW_S)
    stop = track_end_s if held.stop_latency_s is None else onset_s + held.stop_latency_s
    return replace(
        base,
        talking=True,
        yielded=held.yielded,
        stop_latency_s=held.stop_latency_s,
        talk_over_s=round(max(0.0, min(stop, end) - onset_s), 4),
        spoke_again=held.spoke_again,
        said_after=after,
    )
