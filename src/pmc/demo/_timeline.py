"""Placing a script's words in time: where every phrase, pause, backchannel and take falls.

The same placement gives the audio and the ground truth, so the ground truth is exact by
construction. The synthesiser is passed in, so the placement rules can be tested without it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from pmc.audio import SAMPLE_RATE, FloatArray
from pmc.corpus import Channel
from pmc.demo._script import Pause, PauseKind, Phrase, Script, ScriptTurn
from pmc.errors import InputError
from pmc.tts import Utterance

GROUND_TRUTH_SCHEMA_VERSION = 1
LEAD_IN_S = 0.5
"""Silence before the first word, so the first onset is not at sample 0."""
BACKCHANNEL_DELAY_S = 0.15
"""A backchannel starts this long after the end of the word it answers."""
TAKE_MIN_DELAY_S = 0.2
"""A failed take starts at least this long into the speaker's pause."""
TAKE_OVERLAP_S = 0.3
"""The speaker resumes this long before the failed take stops: the listener is talked over and
yields, which is what tells a failed take from a short turn."""
BARGE_IN_DELAY_S = 0.1
"""A barge-in starts this long into the first word after its marker: the speaker is talking
when it comes (right after the word before, it could fall in the speaker's breath at a comma,
and the speaker would be talked over only once resumed)."""
CUT_FADE_S = 0.01
"""A speaker cut off by a barge-in fades out over this, so the cut is not a click."""
INCIDENTAL_PAUSE_S = 0.25
"""Unscripted gaps inside a phrase (sentence breaks) longer than this are listed too: the label
engine closes gaps of at most 250 ms (paper section 3.2) and sees the longer ones as pauses."""

FACT_WITHIN_S = 30.0
"""Conversation recall asks about a fact stated in the first 30 seconds (paper section 3.3)."""

Synthesize = Callable[[tuple[str, ...], Channel], Utterance]


class GroundTruthKind(StrEnum):
    """What a ground-truth event is."""

    TURN = "turn"
    PAUSE = "pause"
    TURN_END = "turn_end"
    BACKCHANNEL = "backchannel"
    FAILED_TAKE = "failed_take"
    OVERLAP = "overlap"
    BARGE_IN = "barge_in"
    """The listener starts a turn over the speaker, who stops: from its onset to that stop."""
    FACT = "fact"


class PauseOrigin(StrEnum):
    """Whether a pause was written in the script or fell out of synthesis (a sentence break)."""

    SCRIPTED = "scripted"
    INCIDENTAL = "incidental"


@dataclass(frozen=True)
class GroundTruthEvent:
    """One scripted event on the conversation clock.

    For a turn end, ``start_conv_s`` and ``end_conv_s`` are both the last word's end, and
    ``gap_s`` is the time to the next speaker's first word (negative for an overlap; None when
    nobody speaks again).
    """

    kind: GroundTruthKind
    speaker: Channel | None
    start_conv_s: float
    end_conv_s: float
    text: str = ""
    pause_kind: PauseKind | None = None
    origin: PauseOrigin | None = None
    gap_s: float | None = None
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form; absent optional fields are left out."""
        data: dict[str, Any] = {
            "kind": self.kind.value,
            "speaker": self.speaker.value if self.speaker else None,
            "start_conv_s": self.start_conv_s,
            "end_conv_s": self.end_conv_s,
        }
        optional = {
            "text": self.text or None,
            "pause_kind": self.pause_kind.value if self.pause_kind else None,
            "origin": self.origin.value if self.origin else None,
            "gap_s": self.gap_s,
            "line": self.line,
        }
        data.update({k: v for k, v in optional.items() if v is not None})
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GroundTruthEvent:
        """Inverse of :meth:`to_dict`."""
        return cls(
            kind=GroundTruthKind(data["kind"]),
            speaker=Channel(data["speaker"]) if data.get("speaker") else None,
            start_conv_s=float(data["start_conv_s"]),
            end_conv_s=float(data["end_conv_s"]),
            text=data.get("text", ""),
            pause_kind=PauseKind(data["pause_kind"]) if data.get("pause_kind") else None,
            origin=PauseOrigin(data["origin"]) if data.get("origin") else None,
            gap_s=data.get("gap_s"),
            line=data.get("line"),
        )


@dataclass(frozen=True)
class PlacedWord:
    """A word at its place on the conversation clock."""

    text: str
    start_conv_s: float
    end_conv_s: float
    group: int
    """Words with the same group were one synthesis (one transcript record)."""


@dataclass
class DemoTimeline:
    """Everything placed for one script: audio clips, words and ground-truth events."""

    clips: dict[Channel, list[tuple[int, FloatArray]]] = field(
        default_factory=lambda: {Channel.A: [], Channel.B: []}
    )
    """Per speaker: (first sample, audio) of every synthesised clip."""
    words: dict[Channel, list[PlacedWord]] = field(
        default_factory=lambda: {Channel.A: [], Channel.B: []}
    )
    events: list[GroundTruthEvent] = field(default_factory=list)
    _groups: int = 0

    def place(
        self, speaker: Channel, utterance: Utterance, first_word_s: float, words: tuple[str, ...]
    ) -> list[PlacedWord]:
        """Put ``utterance`` so that its first word starts at ``first_word_s`` (to the sample)."""
        offset = round((first_word_s - utterance.spans[0][0]) * SAMPLE_RATE)
        self.clips[speaker].append((offset, utterance.audio))
        base = offset / SAMPLE_RATE
        self._groups += 1
        placed = [
            PlacedWord(text, round(base + s, 6), round(base + e, 6), self._groups)
            for text, (s, e) in zip(words, utterance.spans, strict=True)
        ]
        self.words[speaker].extend(placed)
        return placed

    def cut(self, speaker: Channel, at_s: float) -> None:
        """Silence ``speaker`` from ``at_s`` on (to the sample).

        Its last clip ends there, faded, and so do its words: one it is in the middle of ends
        at the cut; later ones are never said.
        """
        at = round(at_s * SAMPLE_RATE)
        offset, clip = self.clips[speaker][-1]
        kept = clip[: max(0, at - offset)].copy()
        fade = min(len(kept), round(CUT_FADE_S * SAMPLE_RATE))
        if fade:
            kept[-fade:] *= np.linspace(1.0, 0.0, fade, dtype=np.float32)
        self.clips[speaker][-1] = (offset, kept)
        cut_s = round(at / SAMPLE_RATE, 6)
        self.words[speaker] = [
            PlacedWord(w.text, w.start_conv_s, min(w.end_conv_s, cut_s), w.group)
            for w in self.words[speaker]
            if w.start_conv_s < cut_s
        ]


def _strip(word: str) -> str:
    return word.strip(".,?!").lower()


def build_timeline(script: Script, synthesize: Synthesize, path: str) -> DemoTimeline:
    """Place every word of ``script``; ``path`` names the script in messages."""
    timeline = DemoTimeline()
    previous_end: float | None = None
    previous_last_phrase: float | None = None
    turn_ends: list[GroundTruthEvent] = []
    barged_at: float | None = None  # where the previous turn's barge-in starts this one
    for turn in script.turns:
        barged = barged_at is not None
        speaker, listener = turn.speaker, turn.speaker.other
        cursor = LEAD_IN_S if previous_end is None else previous_end + turn.gap_s
        if barged_at is not None:
            cursor, barged_at = barged_at, None
        if previous_end is not None and turn_ends:
            last = turn_ends[-1]
            turn_ends[-1] = GroundTruthEvent(
                GroundTruthKind.TURN_END,
                last.speaker,
                last.start_conv_s,
                last.end_conv_s,
                gap_s=round(cursor - last.end_conv_s, 6),
                line=last.line,
            )
            if cursor < last.end_conv_s and not barged:
                timeline.events.append(
                    GroundTruthEvent(
                        GroundTruthKind.OVERLAP,
                        None,
                        round(cursor, 6),
                        last.end_conv_s,
                        line=turn.line,
                    )
                )
        if previous_last_phrase is not None and cursor < previous_last_phrase:
            raise InputError(
                path,
                f"the overlap of {turn.gap_s} s reaches back before the previous turn's last "
                "phrase began: the previous speaker would resume under this turn",
                f"line {turn.line}",
            )
        turn_start: float | None = None
        for piece in turn.pieces:
            if isinstance(piece, Phrase):
                placed = timeline.place(
                    speaker, synthesize(piece.words, speaker), cursor, piece.words
                )
                turn_start = placed[0].start_conv_s if turn_start is None else turn_start
                if piece.barge_in is not None:
                    placed, barged_at = _barge_in(timeline, speaker, placed, piece, turn, path)
                _incidental_pauses(timeline, speaker, placed, turn.line)
                for after, said in piece.backchannels:
                    start = placed[after].end_conv_s + BACKCHANNEL_DELAY_S
                    bc = timeline.place(listener, synthesize(said, listener), start, said)
                    timeline.events.append(
                        GroundTruthEvent(
                            GroundTruthKind.BACKCHANNEL,
                            listener,
                            bc[0].start_conv_s,
                            bc[-1].end_conv_s,
                            " ".join(said),
                            line=turn.line,
                        )
                    )
                cursor = placed[-1].end_conv_s
                previous_last_phrase = placed[0].start_conv_s
            elif isinstance(piece, Pause):
                resume = cursor + piece.duration_s
                if piece.take:
                    clip = synthesize(piece.take, listener)
                    length = clip.spans[-1][1] - clip.spans[0][0]
                    start = max(resume + TAKE_OVERLAP_S - length, cursor + TAKE_MIN_DELAY_S)
                    take = timeline.place(listener, clip, start, piece.take)
                    resume = take[-1].end_conv_s - TAKE_OVERLAP_S
                    timeline.events.append(
                        GroundTruthEvent(
                            GroundTruthKind.FAILED_TAKE,
                            listener,
                            take[0].start_conv_s,
                            take[-1].end_conv_s,
                            " ".join(piece.take),
                            line=turn.line,
                        )
                    )
                timeline.events.append(
                    GroundTruthEvent(
                        GroundTruthKind.PAUSE,
                        speaker,
                        cursor,
                        round(resume, 6),
                        pause_kind=piece.kind,
                        origin=PauseOrigin.SCRIPTED,
                        line=turn.line,
                    )
                )
                cursor = round(resume, 6)
        if turn_start is None:
            raise InputError(path, "a turn must start with words", f"line {turn.line}")
        text = " ".join(w for p in turn.pieces if isinstance(p, Phrase) for w in p.words)
        if barged_at is not None:  # only the words said before the cut
            text = " ".join(w.text for w in timeline.words[speaker] if w.start_conv_s >= turn_start)
        timeline.events.append(
            GroundTruthEvent(
                GroundTruthKind.TURN, speaker, turn_start, cursor, text, line=turn.line
            )
        )
        turn_ends.append(
            GroundTruthEvent(GroundTruthKind.TURN_END, speaker, cursor, cursor, line=turn.line)
        )
        previous_end = cursor
    timeline.events.extend(turn_ends)
    timeline.events.append(_fact_event(script, timeline, path))
    _check_no_self_overlap(timeline, path)
    timeline.events.sort(key=lambda e: (e.start_conv_s, e.kind.value, e.speaker or ""))
    return timeline


def _barge_in(
    timeline: DemoTimeline,
    speaker: Channel,
    placed: list[PlacedWord],
    phrase: Phrase,
    turn: ScriptTurn,
    path: str,
) -> tuple[list[PlacedWord], float]:
    """Cut ``speaker`` where the listener's barge-in makes it stop; record the barge-in.

    Returns the words still said and where the listener's turn starts.
    """
    assert phrase.barge_in is not None
    after, delay_s = phrase.barge_in
    onset = round(placed[after + 1].start_conv_s + BARGE_IN_DELAY_S, 6)
    cut = round(onset + delay_s, 6)
    if cut >= placed[-1].end_conv_s:
        raise InputError(
            path,
            f"the turn is over {cut - placed[-1].end_conv_s:.2f} s before the barge-in would "
            "stop it: more words after the marker, or a shorter delay",
            f"line {turn.line}",
        )
    timeline.cut(speaker, cut)
    said = [w for w in timeline.words[speaker] if w.group == placed[0].group]
    stop = said[-1].end_conv_s  # the cut, or the end of the last word before it
    if stop <= onset:
        raise InputError(
            path,
            "the speaker is between words for the whole barge-in: nobody is talked over; "
            "a shorter gap after the marker, or a longer delay",
            f"line {turn.line}",
        )
    for kind, who in ((GroundTruthKind.BARGE_IN, speaker.other), (GroundTruthKind.OVERLAP, None)):
        timeline.events.append(GroundTruthEvent(kind, who, onset, stop, line=turn.line))
    return said, onset


def _incidental_pauses(
    timeline: DemoTimeline, speaker: Channel, placed: list[PlacedWord], line: int
) -> None:
    for before, after in itertools.pairwise(placed):
        if after.start_conv_s - before.end_conv_s > INCIDENTAL_PAUSE_S:
            timeline.events.append(
                GroundTruthEvent(
                    GroundTruthKind.PAUSE,
                    speaker,
                    before.end_conv_s,
                    after.start_conv_s,
                    pause_kind=PauseKind.COMPLETE,
                    origin=PauseOrigin.INCIDENTAL,
                    line=line,
                )
            )


def _fact_event(script: Script, timeline: DemoTimeline, path: str) -> GroundTruthEvent:
    """Find the fact's words among the fact speaker's words."""
    target = [_strip(w) for w in script.fact.split()]
    words = timeline.words[script.fact_speaker]
    texts = [_strip(w.text) for w in words]
    for i in range(len(texts) - len(target) + 1):
        if texts[i : i + len(target)] == target:
            first, last = words[i], words[i + len(target) - 1]
            if last.end_conv_s > FACT_WITHIN_S:
                raise InputError(
                    path, f"the fact ends at {last.end_conv_s:.1f} s, after {FACT_WITHIN_S:.0f} s"
                )
            return GroundTruthEvent(
                GroundTruthKind.FACT,
                script.fact_speaker,
                first.start_conv_s,
                last.end_conv_s,
                script.fact,
            )
    raise InputError(path, f"the fact {script.fact!r} is not said by {script.fact_speaker.value}")


def _check_no_self_overlap(timeline: DemoTimeline, path: str) -> None:
    for speaker, words in timeline.words.items():
        ordered = sorted(words, key=lambda w: w.start_conv_s)
        for before, after in itertools.pairwise(ordered):
            if after.start_conv_s < before.end_conv_s:
                raise InputError(
                    path,
                    f"speaker {speaker.value} would say {after.text!r} while still saying "
                    f"{before.text!r} at {after.start_conv_s:.2f} s; move a backchannel or a gap",
                )
