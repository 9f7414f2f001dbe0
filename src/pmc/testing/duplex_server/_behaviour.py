"""What :class:`ListeningMoshi` does, and its records of what it heard and said."""

from __future__ import annotations

from dataclasses import dataclass, field

from pmc.testing.hosted._behaviour import REPLY_TEXT

STEP_MS = 30.0
""":class:`ListeningMoshi` sends output frame ``i`` this long after input frame ``i`` was due
(``(i + 1) x 80 ms`` on its stream clock), as a model with a steady step time would: well over
the fake's own work per frame (decoding, endpointing, encoding: a few ms, more on a busy
machine), well under a frame. Steady output is what a client plays where it arrived: output
that arrives early or late by a varying amount pushes every later frame back (the harness
plays each chunk after the one before it, as a client does)."""
LISTEN_SILENCE_MS = 300.0
"""Speech followed by this much quiet ends the user's turn for :class:`ListeningMoshi` (the
hosted fakes' 300 ms server-VAD setting)."""


@dataclass(frozen=True)
class ListenerBehaviour:
    """What :class:`ListeningMoshi` does in every session.

    Attributes:
        silence_ms: Speech, then this much quiet: the user's turn has ended.
        reply_text: What it says then (the bundled voice, starting sharply; its text pieces go
            out with the frames that carry the audio).
        seed: Seeds where in its output frame each answer starts; each session draws from its
            own generator (this seed and the session's: the ``seed`` query parameter a card with
            ``send_seed`` sends, the rollout's own; else the session id).
        barge_in: Speech starting while it talks stops it, from the next output frame on (as a
            hosted API's barge-in does), so an answer to a short gap inside a turn is over
            before the turn goes on. False: it never stops.
        yield_ms: With ``barge_in``, stop exactly this long after the speech it heard began
            instead (its speech cut at that sample of the stream clock, as played; at once if
            that much has already gone out): a known yield to measure a stop latency against.
        step_ms: Output frame ``i`` leaves this long after input frame ``i`` was due (on a
            grid that starts with the handshake), or at once if that has passed
            (:data:`STEP_MS`).
    """

    silence_ms: float = LISTEN_SILENCE_MS
    reply_text: str = REPLY_TEXT
    seed: int = 0
    barge_in: bool = True
    step_ms: float = STEP_MS
    yield_ms: float | None = None


@dataclass
class DuplexAnswer:
    """One answer of :class:`ListeningMoshi`.

    Attributes:
        turn_end_s: Where its endpointer heard the user's speech end, on the decoded input (which
            the codec delays by :data:`OPUS_DELAY_S`), on the session's stream clock.
        decided_s: The end of the input that decided it.
        frame: The output frame its speech starts in (output frame ``i`` answers input frame
            ``i``).
        offset: The sample of that frame where its speech starts (a seeded draw).
        sent_ns: When that frame went out, on the fake's monotonic clock.
        played_ns: Where a client that got each frame the moment it was sent starts playing
            that frame: at its arrival, or after the frame before it if that is still playing
            (the harness's playback, docs/architecture.md "Clocks"): a frame the fake sent late
            delays every later one.
        said_s: How much of the speech went out (all of it unless a barge-in stopped it).
        speech_s: Where its speech begins on the stream clock: ``played_ns`` on the stream
            clock plus ``offset``. Set when the session ends, from the session's final origin.
            What a client decodes has the speech :data:`OPUS_DELAY_S` later still.
        heard_s: With a ``yield_ms``: where the speech it heard while talking began (the start
            of the endpointer's first speech window, on the decoded input, which the codec
            delays by :data:`OPUS_DELAY_S`), on the stream clock.
        cut: The sample of its audio (lead-in included) where it stopped (None: not stopped).
        stop_ns: Where a client plays that sample (on the fake's monotonic clock, as
            ``played_ns``; 0: not stopped).
        stopped_s: ``stop_ns`` on the stream clock (set when the session ends).
    """

    turn_end_s: float
    decided_s: float
    frame: int
    offset: int
    sent_ns: int = 0
    played_ns: int = 0
    said_s: float = 0.0
    speech_s: float | None = None
    heard_s: float | None = None
    cut: int | None = None
    stop_ns: int = 0
    stopped_s: float | None = None

    @property
    def heard(self) -> tuple[float, float] | None:
        """Where its speech is on the stream clock, as sent (None before the session ended)."""
        if self.speech_s is None:
            return None
        return (self.speech_s, self.speech_s + self.said_s)


@dataclass
class ListenerSession:
    """What one :class:`ListeningMoshi` session heard and said.

    Attributes:
        session_id: Its number, in the order sessions opened.
        seed: The ``seed`` query parameter the client sent (PersonaPlex's; the rollout's seed),
            if any: which rollout the session was.
        frames: Input frames received (1920 samples each), each answered by an output frame
            while the client was still there.
        origin_ns: The stream's origin on the fake's monotonic clock: the earliest of each
            frame's arrival less the audio received by then, as the hosted fakes estimate it
            (module :mod:`pmc.testing.hosted._session`). On one machine the harness's clock is
            the same monotonic clock, so this is comparable with a trace's ``t0_ns``.
        speech: The endpointer's decisions: ``(started|stopped, stream seconds)``.
        answers: What it said.
        sent_ns: When each audio message went out, in order, on the fake's monotonic clock (its
            every page decodes to one output frame): a client's arrival stamps compare with it.
    """

    session_id: str
    seed: int | None = None
    frames: int = 0
    origin_ns: int | None = None
    speech: list[tuple[str, float]] = field(default_factory=list)
    answers: list[DuplexAnswer] = field(default_factory=list)
    sent_ns: list[int] = field(default_factory=list)
