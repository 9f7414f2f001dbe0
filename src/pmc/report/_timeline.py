"""A rollout's timeline as inline SVG, on the stream clock (t = 0 at the first live sample).

It shows where the history ended (0: the live stream starts where the history stops), the
person's speech (the speech gate's intervals on the history's last seconds and the live input,
over a thin line for the live input's extent), the labelled pause (a shaded span) or turn /
question end (a line), where the stream stopped, what was said from the system's seat in the
history's last seconds, the system's speech (gate intervals, word-bearing or wordless, with
their words), where the system talked over the person (a frame across both lanes), at a
talk-over point where the person's clip was played over the reply (a frame on the person's
lane) and, at turn ends, where the human reply the system is scored against ran. The person's
intervals are ``rect.person-speech`` elements whose ``data-start`` and ``data-end`` give their
bounds in seconds, so a labelled pause shows as silence that can be checked. Every word is
escaped: it is a recogniser's output and may hold markup.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

from pmc.scoring import Evidence

WIDTH = 960
LEFT = 110
"""Room for the lane names."""
RIGHT = 16
WORD_ROWS = 3
"""Word labels take turns over this many rows, so neighbouring words rarely overlap."""
TICK_STEPS = (0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0)
MAX_TICKS = 16

_LIVE_Y, _LIVE_H = 34, 18
_SPEECH_Y, _SPEECH_H = 62, 22
_HUMAN_Y, _HUMAN_H = 92, 10
_WORDS_Y, _WORD_ROW_H = 108, 14
_AXIS_Y = _WORDS_Y + WORD_ROWS * _WORD_ROW_H + 4
HEIGHT = _AXIS_Y + 22

Spans = tuple[tuple[float, float], ...]
"""Speech intervals, start and end in seconds on the stream clock."""
_Scale = Callable[[float], float]
"""Seconds on the stream clock to a horizontal pixel position."""


@dataclass(frozen=True)
class Timeline:
    """What a timeline shows, all in seconds on the stream clock.

    Attributes:
        live_s: Length of the live input.
        boundary_s: The moment under test: a pause's start, a turn's or question's end.
        boundary_end_s: A pause's end; equal to ``boundary_s`` for the other kinds.
        boundary_label: What the boundary is (``turn end``, ``question end``, ``pause``).
        pause: Whether the boundary is a labelled pause (drawn as a span, else as a line).
        stop_s: Where the stream stopped (the played track's end); None if unknown.
        stop_label: Why it stopped.
        end_of_input_s: When the harness ended input for the system, if it did.
        speech: The system's gate intervals and their words (empty when unscored).
        human_reply: Where the human reply ran (turn ends), for comparison.
        person_speech: The person's speech intervals (the gate on what the system heard).
        seat_speech: Speech from the system's seat in the history's tail (before 0).
        start_s: The left edge, where the page's audio starts (None: just before 0).
        talk_over: Where the system talked over the person's live turn (its score's).
        clip: At a talk-over point, where the person's clip was played over the reply.
    """

    live_s: float
    boundary_s: float
    boundary_end_s: float
    boundary_label: str
    pause: bool
    stop_s: float | None
    stop_label: str = ""
    end_of_input_s: float | None = None
    speech: tuple[Evidence, ...] = ()
    human_reply: tuple[float, float] | None = None
    person_speech: Spans = ()
    seat_speech: Spans = ()
    start_s: float | None = None
    talk_over: Spans = ()
    clip: tuple[float, float] | None = None

    @property
    def end_s(self) -> float:
        """The right edge: everything shown fits before it."""
        ends = [self.live_s, self.boundary_end_s, *(e.end_stream_s for e in self.speech)]
        if self.human_reply is not None:
            ends.append(self.human_reply[1])
        if self.clip is not None:
            ends.append(self.clip[1])
        if self.stop_s is not None:
            ends.append(self.stop_s)
        return max(ends) + 0.25


def svg(timeline: Timeline) -> str:
    """The timeline as an ``<svg>`` element for an HTML page (styled by the page's CSS)."""
    end = timeline.end_s
    start = -max(0.25, 0.03 * end) if timeline.start_s is None else timeline.start_s

    def x(t: float) -> float:
        return round(LEFT + (t - start) / (end - start) * (WIDTH - LEFT - RIGHT), 1)

    parts = [
        f'<svg class="timeline" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" '
        f'height="{HEIGHT}" role="img" aria-label="timeline on the stream clock">'
    ]
    parts += _lane_names()
    parts += _boundary(timeline, x)
    parts += _axis(start, end, x)
    parts += _person(timeline, x)
    parts += _seat(timeline.seat_speech, x)
    parts += _speech(timeline.speech, x)
    parts += _talk_over(timeline.talk_over, x)
    if timeline.clip is not None:
        a, b = timeline.clip
        parts.append(
            f'<rect class="clip" data-start="{a:.4f}" data-end="{b:.4f}" x="{x(a)}" '
            f'y="{_LIVE_Y - 2}" width="{max(x(b) - x(a), 1)}" height="{_LIVE_H + 4}">'
            f"<title>the person's clip over the reply {a:.2f}–{b:.2f} s</title></rect>"
        )
        parts += _marker(x(a), "clip", "clip-mark", "start", row=1)
    if timeline.human_reply is not None:
        a, b = timeline.human_reply
        parts.append(
            f'<rect class="human" x="{x(a)}" y="{_HUMAN_Y}" width="{max(x(b) - x(a), 1)}" '
            f'height="{_HUMAN_H}"><title>the human reply {a:.2f}–{b:.2f} s</title></rect>'
        )
    parts += _marker(x(0), "history end", "hist", "start")
    if timeline.end_of_input_s is not None:
        # Left of its line: the boundary's label sits right of the boundary, often the same place.
        parts += _marker(x(timeline.end_of_input_s), "input ended", "eoi", "end", row=1)
    if timeline.stop_s is not None:
        label = f"stop: {timeline.stop_label}" if timeline.stop_label else "stop"
        parts += _marker(x(timeline.stop_s), label, "stop", "end")
    parts.append("</svg>")
    return "".join(parts)


def _lane_names() -> list[str]:
    names = (
        ("person speech", _LIVE_Y + _LIVE_H / 2),
        ("system speech", _SPEECH_Y + _SPEECH_H / 2),
        ("human reply", _HUMAN_Y + _HUMAN_H / 2),
        ("system words", _WORDS_Y + _WORD_ROW_H),
    )
    return [f'<text class="lane" x="4" y="{y + 4}">{name}</text>' for name, y in names]


def _person(timeline: Timeline, x: _Scale) -> list[str]:
    """The live input's extent as a thin line, and the person's speech intervals over it."""
    mid = _LIVE_Y + _LIVE_H / 2
    parts = [
        f'<rect class="live" x="{x(0)}" y="{mid - 1}" width="{x(timeline.live_s) - x(0)}" '
        f'height="2"><title>live input 0.00–{timeline.live_s:.2f} s</title></rect>'
    ]
    for a, b in timeline.person_speech:
        css = "person-speech history" if b <= 0 else "person-speech"
        what = "the person speaks (history)" if b <= 0 else "the person speaks"
        parts.append(
            f'<rect class="{css}" data-start="{a:.4f}" data-end="{b:.4f}" x="{x(a)}" '
            f'y="{_LIVE_Y}" width="{max(x(b) - x(a), 1)}" height="{_LIVE_H}">'
            f"<title>{what} {a:.2f}–{b:.2f} s</title></rect>"
        )
    return parts


def _talk_over(spans: Spans, x: _Scale) -> list[str]:
    """Where the system talked over the person: a frame across both speech lanes."""
    top, bottom = _LIVE_Y - 2, _SPEECH_Y + _SPEECH_H + 2
    return [
        f'<rect class="talk-over" data-start="{a:.4f}" data-end="{b:.4f}" x="{x(a)}" '
        f'y="{top}" width="{max(x(b) - x(a), 1)}" height="{bottom - top}">'
        f"<title>the system talks over the person {a:.2f}–{b:.2f} s</title></rect>"
        for a, b in spans
    ]


def _seat(spans: Spans, x: _Scale) -> list[str]:
    """What was said from the system's seat before the stream: the history's other side."""
    return [
        f'<rect class="seat-speech" data-start="{a:.4f}" data-end="{b:.4f}" x="{x(a)}" '
        f'y="{_SPEECH_Y}" width="{max(x(b) - x(a), 1)}" height="{_SPEECH_H}">'
        f"<title>the system's seat in the history {a:.2f}–{b:.2f} s</title></rect>"
        for a, b in spans
    ]


def _boundary(timeline: Timeline, x: _Scale) -> list[str]:
    top, bottom = 14, _AXIS_Y
    label = escape(timeline.boundary_label)
    b, e = timeline.boundary_s, timeline.boundary_end_s
    if timeline.pause:
        return [
            f'<rect class="pause" x="{x(b)}" y="{top}" width="{max(x(e) - x(b), 1)}" '
            f'height="{bottom - top}"><title>{label} {b:.2f}–{e:.2f} s</title></rect>',
            f'<text class="mark" x="{x(b) + 3}" y="{top + 10}">{label}</text>',
        ]
    return [
        f'<line class="boundary" x1="{x(b)}" x2="{x(b)}" y1="{top}" y2="{bottom}"/>',
        f'<text class="mark" x="{x(b) + 3}" y="{top + 10}">{label} {b:.2f} s</text>',
    ]


def _marker(at: float, label: str, css: str, anchor: str, row: int = 0) -> list[str]:
    shift = 3 if anchor == "start" else -3
    return [
        f'<line class="{css}" x1="{at}" x2="{at}" y1="{2 + 12 * row}" y2="{_AXIS_Y}"/>',
        f'<text class="mark" x="{at + shift}" y="{10 + 12 * row}" text-anchor="{anchor}">'
        f"{escape(label)}</text>",
    ]


def _speech(speech: Sequence[Evidence], x: _Scale) -> list[str]:
    parts = []
    for e in speech:
        css = "speech" if e.word_bearing else "wordless"
        what = "speech" if e.word_bearing else "wordless phonation"
        parts.append(
            f'<rect class="{css}" x="{x(e.start_stream_s)}" y="{_SPEECH_Y}" '
            f'width="{max(x(e.end_stream_s) - x(e.start_stream_s), 1)}" height="{_SPEECH_H}">'
            f"<title>{what} {e.start_stream_s:.2f}–{e.end_stream_s:.2f} s</title></rect>"
        )
    words = [w for e in speech for w in e.words]
    for i, w in enumerate(sorted(words, key=lambda w: w.start_s)):
        y = _WORDS_Y + (i % WORD_ROWS + 1) * _WORD_ROW_H - 3
        text = escape(w.text.strip())
        parts.append(
            f'<text class="word" x="{x(w.start_s)}" y="{y}">{text}'
            f"<title>{text} {w.start_s:.2f}–{w.end_s:.2f} s</title></text>"
        )
    return parts


def _axis(start: float, end: float, x: _Scale) -> list[str]:
    step = next((s for s in TICK_STEPS if (end - start) / s <= MAX_TICKS), TICK_STEPS[-1])
    parts = [f'<line class="axis" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{_AXIS_Y}" y2="{_AXIS_Y}"/>']
    first = int(start / step)  # toward zero: the first tick inside the range
    for i in range(first, int(end / step) + 1):
        tick = i * step
        parts.append(
            f'<line class="axis" x1="{x(tick)}" x2="{x(tick)}" y1="{_AXIS_Y}" '
            f'y2="{_AXIS_Y + 4}"/><text class="tick" x="{x(tick)}" y="{_AXIS_Y + 16}" '
            f'text-anchor="middle">{tick:g}</text>'
        )
    parts.append(
        f'<text class="tick" x="{WIDTH - RIGHT}" y="{HEIGHT - 2}" text-anchor="end">s</text>'
    )
    return parts
