"""How a fake hosted server behaves, and what it records about what it did.

The behaviour is one frozen dataclass shared by the three dialects: the answer's latency, text
and delta sizes, the seeded jitter of its start and of its lead-in of silence, barge-in, the
drift of a real API (events and fields a client does not know, in every session), its push-back
(refused handshakes, rate limits, a ``goAway``) and the faults (an error event, a malformed
message, an unknown event, an abrupt close, a stall, a slow handshake, a session never
acknowledged). The records say, on the stream clock of each session
(sample ``k`` received is at ``k / rate`` s), when the fake's endpointer heard speech start and
stop, when each answer started and stopped and where its speech began, so that tests can
compare what the harness measured with what the fake did.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

LATENCY_MS = 700.0
"""Default answer latency: from the end of the turn to the answer's first sample (the issue's
700 ms setting; a plausible hosted system's)."""
REPLY_TEXT = "Right, I see what you mean. Tell me a little more about that."
"""Default answer: real words, so that scoring's recogniser finds a reply (a tone would be
wordless phonation and never count)."""
DELTA_BYTES = (4801, 3199, 6401, 2401)
"""Audio delta sizes in bytes, cycled: odd counts split samples across deltas (about 50 to
130 ms of 24 kHz PCM16 each, like a streaming TTS)."""
SPEEDUP = 4.0
"""Answers are sent this many times faster than real time (hosted APIs send ahead of playback)."""
COMMIT_DELAY_MS = 150.0
"""xAI processes a commit asynchronously: ``committed`` comes this much later (paper App. C)."""
LEAD_IN_RATE = 24_000
"""Lead-ins are whole samples of the 24 kHz output (every dialect's answer rate)."""


@dataclass(frozen=True)
class FakeBehaviour:
    """What a fake hosted server does, in every session.

    Attributes:
        latency_ms: From the end of the user's turn to the answer's first sample, on the stream
            clock. The end of the turn is the end of speech when the server's VAD decides it,
            the commit (or ``activityEnd``) otherwise; the answer never starts before the server
            knows the turn ended, or before it was asked for.
        reply_text: What the answer says (spoken by the bundled voice).
        delta_bytes: Sizes of the audio deltas, cycled.
        speedup: How much faster than real time deltas are sent.
        jitter_ms: Each answer starts later by a draw from ``[0, jitter_ms)``, so that its start
            falls anywhere inside an input frame rather than on the endpointer's 20 ms grid.
        lead_in_ms: Each answer's audio opens with a draw from ``[0, lead_in_ms]`` of digital
            silence (whole samples) before its speech, which then begins sharply.
        seed: Seeds those draws; each session draws from its own generator (seed and session
            id), so a session's answers are reproducible whatever the order sessions open in.
        barge_in: Whether speech starting over an answer stops it (the API's default).
        barge_in_delay_ms: How long after the speech over a playing answer began (its first
            sample, :attr:`AnswerRecord.heard_s`) the server says so and stops the answer: a
            system that yields a known delay after it hears the person (0: when its endpointer
            decides, as before).
        commit_delay_ms: xAI only: the delay before ``input_audio_buffer.committed``.
        unknown_every: Drift, not a fault, so in every session and kept by
            :meth:`without_faults`: OpenAI and xAI send an event type they do not have right
            after each ``response.created``; every Gemini message carries a top-level field
            Gemini does not have.
        refuse_every: Refuse the handshake of every ``refuse_every``-th connection attempt,
            counting from 1 across the server (attempts 1, 1 + n, 1 + 2n, ...), with HTTP 429
            and a ``Retry-After`` header; before any session exists, and whatever
            ``fault_sessions`` says (the server counts them, :attr:`FakeServer.refused`).
        retry_after_s: The wait a refusal's ``Retry-After`` header and a rate limit's message
            name (:attr:`retry_after`).
        rate_limit_after: Push back after this many client messages: OpenAI and xAI send a
            rate-limit ``error`` event and keep the session open; Gemini closes with 1013.
        go_away_after: Gemini only: send ``goAway`` after this many client messages, then close
            with 1001 (the other dialects ignore it).
        error_after: Send an error event after this many client messages (an
            ``invalid_request_error`` with code ``error_code``; Gemini closes with 1011).
        error_code: The code of that error: ``server_error`` by default (an overload, which
            passes), or e.g. ``invalid_value`` for one that does not.
        malformed_after: Send a message that is not JSON after this many client messages.
        unknown_after: Send an event the dialect does not have after this many messages.
        close_after: Drop the connection (no closing handshake) after this many messages.
        stall_after: Stop reading and sending for ``stall_s`` after this many messages.
        stall_on: Stall the same way on receiving a client message of this type (its ``type``,
            or its field for Gemini), e.g. ``response.create``: the answer is then late.
        stall_s: How long a stall lasts.
        handshake_delay_s: Hold the opening handshake this long before answering it.
        acknowledge: Acknowledge the session settings (False: never, a stalled handshake).
        fault_sessions: The faults apply to this many sessions, the first ones (None: all);
            later sessions behave well, so a run goes on around a faulty rollout.
        server_vad: OpenAI only: whether it has turn detection (False: a session whose
            ``turn_detection`` is not null is refused, as a server without an endpointer does).
        commit_needs_final: OpenAI only: a commit must carry ``"final": true`` and is then
            answered without ``response.create`` (vLLM-Omni's turn-based handler); one without
            it is refused.
    """

    latency_ms: float = LATENCY_MS
    reply_text: str = REPLY_TEXT
    delta_bytes: tuple[int, ...] = DELTA_BYTES
    speedup: float = SPEEDUP
    jitter_ms: float = 0.0
    lead_in_ms: float = 0.0
    seed: int = 0
    barge_in: bool = True
    barge_in_delay_ms: float = 0.0
    commit_delay_ms: float = COMMIT_DELAY_MS
    unknown_every: bool = False
    refuse_every: int | None = None
    retry_after_s: float = 1.0
    rate_limit_after: int | None = None
    go_away_after: int | None = None
    error_after: int | None = None
    error_code: str = "server_error"
    malformed_after: int | None = None
    unknown_after: int | None = None
    close_after: int | None = None
    stall_after: int | None = None
    stall_on: str | None = None
    stall_s: float = 0.0
    handshake_delay_s: float = 0.0
    acknowledge: bool = True
    fault_sessions: int | None = None
    server_vad: bool = True
    commit_needs_final: bool = False

    def without_faults(self) -> FakeBehaviour:
        """The same answers and drift, no faults and no push-back."""
        return replace(
            self,
            refuse_every=None,
            rate_limit_after=None,
            go_away_after=None,
            error_after=None,
            malformed_after=None,
            unknown_after=None,
            close_after=None,
            stall_after=None,
            stall_on=None,
            handshake_delay_s=0.0,
            acknowledge=True,
            fault_sessions=None,
        )

    @property
    def retry_after(self) -> str:
        """``retry_after_s`` as written on the wire: whole seconds as an integer, else decimal."""
        seconds = float(self.retry_after_s)
        return str(int(seconds)) if seconds.is_integer() else repr(seconds)

    def __post_init__(self) -> None:
        if self.latency_ms < 0 or self.speedup <= 0 or not self.delta_bytes:
            raise ValueError("latency_ms >= 0, speedup > 0 and some delta_bytes are needed")
        if self.jitter_ms < 0 or self.lead_in_ms < 0:
            raise ValueError("jitter_ms and lead_in_ms must be >= 0")
        if any(size <= 0 for size in self.delta_bytes):
            raise ValueError("delta sizes must be positive")
        if (self.refuse_every is not None and self.refuse_every < 1) or self.retry_after_s < 0:
            raise ValueError("refuse_every must be >= 1 and retry_after_s >= 0")


@dataclass
class AnswerRecord:
    """One answer the fake gave, on its session's stream clock (seconds).

    Attributes:
        trigger: What asked for it: ``vad`` (its endpointer), ``commit`` (``response.create``
            after a commit) or ``activity_end``.
        turn_end_s: The end of the turn it answers (end of speech, or the commit).
        requested_s: When it was asked for (the VAD decision or the request's arrival).
        target_s: When it was due to start: ``max(turn_end_s + latency, requested_s)`` plus
            ``jitter_s``.
        onset_s: When its first audio delta was sent (the first sample of its audio).
        onset_sent_s: When the write of that first delta returned: later than ``onset_s`` only
            by the fake's own delay in sending it (a fake held off the processor sends late).
        audio_s: Its length, lead-in included.
        heard_s: For a barge-in with :attr:`FakeBehaviour.barge_in_delay_ms`: where the speech
            over it began (its first sample on the stream clock).
        stopped_s: Where the client stops playing it, for a barge-in: the instant the fake told
            the client that speech had started over it; None when it played out.
        stop_sent_s: When the writes of the messages that told the client so returned (its
            barge-in message and ``speech_started``); None when it played out.
        cancelled: The fake stopped sending it (a barge-in while it was still being sent).
        text_only: It carried text and no audio (xAI's answer to a premature request).
        jitter_s: The drawn delay of its start (:attr:`FakeBehaviour.jitter_ms`).
        lead_in_s: The drawn digital silence before its speech (:attr:`FakeBehaviour.lead_in_ms`).
    """

    trigger: str
    turn_end_s: float
    requested_s: float
    target_s: float
    onset_s: float | None = None
    onset_sent_s: float | None = None
    audio_s: float = 0.0
    stopped_s: float | None = None
    stop_sent_s: float | None = None
    heard_s: float | None = None
    cancelled: bool = False
    text_only: bool = False
    jitter_s: float = 0.0
    lead_in_s: float = 0.0

    @property
    def speech_s(self) -> float | None:
        """Where its speech begins on the stream clock: the truth an onset is measured against.

        Its first audio sample plays when its first delta arrives (the client's stream clock
        and the fake's agree, module :mod:`pmc.testing.hosted._session`), and the speech follows
        the lead-in. None for an answer never sent, or sent without audio.
        """
        if self.onset_s is None or self.text_only:
            return None
        return round(self.onset_s + self.lead_in_s, 6)

    @property
    def heard(self) -> tuple[float, float] | None:
        """The stretch of the stream clock where the client played it (None: never)."""
        if self.onset_s is None or self.text_only:
            return None
        end = self.onset_s + self.audio_s
        if self.stopped_s is not None:
            end = min(end, self.stopped_s)
        return (self.onset_s, end) if end > self.onset_s else None


@dataclass(frozen=True)
class HistoryItem:
    """One history turn as a fake received it.

    Attributes:
        role: ``user`` or ``assistant`` (Gemini's ``model``).
        text: Its text, or the transcript sent with its audio ("" where none was).
        pcm: Its audio as sent, PCM16 little-endian (empty for a text turn).
        rate: The audio's sample rate (0 for a text turn).
    """

    role: str
    text: str
    pcm: bytes = b""
    rate: int = 0


@dataclass
class SessionRecord:
    """Everything one fake session saw and did.

    Attributes:
        session_id: The id the fake gave the session (sent to the client).
        dialect: Which API it spoke.
        path: The path the client opened, with its query (where OpenAI and xAI name the model).
        endpointing: Whether its VAD was on.
        settings: The session settings the client sent.
        received: Types (or fields) of every client message, in order.
        violations: Client messages that were not well-formed events of the dialect.
        speech: ``(started_s, stopped_s)`` VAD decisions: where speech started and ended.
        speech_sent: Each VAD event (``started`` or ``stopped``) and when the fake sent it, on
            the stream clock: the moment a client can know the decision.
        committed_sent: When the fake sent each ``input_audio_buffer.committed`` (OpenAI and
            xAI), on the stream clock.
        answers: The answers given.
        history_turns: Turns received as history.
        history: Each history turn, text or audio, in the order received.
        unknown_sent: Events (OpenAI, xAI) or fields (Gemini) the dialect does not have, sent
            (:attr:`FakeBehaviour.unknown_every` and ``unknown_after``).
        audio_s: Live audio received.
        origin_ns: The stream clock's origin on the fake's monotonic clock (module
            :mod:`pmc.testing.hosted._session`); on one machine the harness's clock is the same
            monotonic clock, so this is comparable with a trace's ``t0_ns``.
        messages: Every client message as received (JSON text), for conformance checks; None
            unless the server was asked to keep them.
        chunks: Live audio messages received.
        vad_on: The chunk (its number, from 1) that turned the endpointer on mid-session, and
            when it arrived (None: on from the start). The endpointer's stream time is taken
            from that arrival, so it carries the chunk's delivery delay, which a test measures
            against when the harness sent it.
    """

    session_id: str
    dialect: str
    path: str = ""
    endpointing: bool = True
    settings: dict[str, Any] = field(default_factory=dict)
    received: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    speech: list[tuple[str, float]] = field(default_factory=list)
    speech_sent: list[tuple[str, float]] = field(default_factory=list)
    committed_sent: list[float] = field(default_factory=list)
    answers: list[AnswerRecord] = field(default_factory=list)
    history_turns: int = 0
    history: list[HistoryItem] = field(default_factory=list)
    unknown_sent: int = 0
    audio_s: float = 0.0
    origin_ns: int | None = None
    messages: list[str] | None = None
    chunks: int = 0
    vad_on: tuple[int, int] | None = None
