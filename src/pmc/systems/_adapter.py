"""The one async interface every system adapter implements, and the adapter registry.

connect, preload the history, send live frames, signal the end of input, read a stream of
timestamped events, close (docs/architecture.md "Systems"). Events carry the instant they reached
the client, taken on receipt, before any parsing.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

import numpy as np

from pmc.audio import FloatArray
from pmc.clock import Clock
from pmc.errors import PmcError
from pmc.registry import Registry
from pmc.systems._card import SystemCard
from pmc.systems._params import NoParams, ParamError, parse_params


class EventKind(StrEnum):
    """What a system sent."""

    AUDIO = "audio"
    TEXT = "text"
    INTERRUPTED = "interrupted"
    """The system (or its endpointer) stopped its own speech: unplayed audio is dropped."""
    SIGNAL = "signal"
    """A protocol event worth keeping (speech started, committed, response done...)."""
    ERROR = "error"


class LatencyMark(StrEnum):
    """A moment inside a reply's latency that a system's own signal marks.

    The report splits each latency at them (docs/architecture.md "Latency parts").
    """

    ENDPOINTED = "endpointed"
    """Its endpointer decided the turn had ended (speech stopped, committed, a verdict)."""
    REQUESTED = "requested"
    """The reply was asked for, after a wait the protocol makes (Grok's settle after commit)."""


@dataclass(frozen=True)
class SystemEvent:
    """One message from a system, stamped on arrival (harness clock, nanoseconds)."""

    kind: EventKind
    arrival_ns: int
    samples: FloatArray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))
    text: str = ""
    detail: dict[str, Any] = field(default_factory=dict)


class RetryReason(StrEnum):
    """Why a failed rollout may be tried again at once, from the start (never stitched)."""

    RATE_LIMITED = "rate_limited"
    """A refused handshake (HTTP 429) or a rate-limit error: the card's concurrency steps down."""
    OVERLOADED = "overloaded"
    """The server says it is overloaded or briefly unavailable (HTTP 503, close 1013, an
    overloaded or server error): the card's concurrency steps down too."""
    GOING_AWAY = "going_away"
    """The server ends the session on its own schedule (Gemini's ``goAway``, close 1001/1012)."""
    WORKER_LOST = "worker_lost"
    """The Ray worker streaming the rollout died, or its node did: it starts afresh elsewhere."""


class TransportError(PmcError):
    """The connection to a system failed (refused, closed, malformed, timed out).

    The rollout is not scored; it is retried on resume of the same run (docs/architecture.md
    "Protocol"). One the server marks as passing (``retry``) is retried within the run too,
    after a backoff that honours the server's ``retry_after_s``.
    """

    def __init__(
        self,
        message: str,
        *,
        retry: RetryReason | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.retry = retry
        self.retry_after_s = retry_after_s


UNKNOWN_SIGNAL = "pmc.unknown"
"""The ``type`` of a signal that keeps a message, or part of one, the adapter does not know."""

LATE_MS = "late_ms"
"""A signal's detail key: how long after its due instant a message the adapter scheduled itself
went out (Grok's request after its settle), in ms. It is input to the system, so the rollout's
timing audit counts it as it counts a late frame."""


def playback_cut(at_ns: int, playing_until_ns: int, reason: str) -> SystemEvent | None:
    """A client stopping its playback at ``at_ns``: an interruption, None if all had played.

    Playback (queued to ``playing_until_ns``, harness clock) then ends there: the harness drops
    what had not played (docs/architecture.md "Clocks"); the event says why and how much.
    """
    unplayed_ms = max(0, playing_until_ns - at_ns) / 1e6
    if unplayed_ms <= 0:
        return None
    detail = {"reason": reason, "unplayed_ms": round(unplayed_ms, 3)}
    return SystemEvent(EventKind.INTERRUPTED, at_ns, detail=detail)


def unknown_signal(
    arrival_ns: int,
    message: dict[str, Any],
    *,
    event: str | None = None,
    fields: Sequence[str] = (),
) -> SystemEvent:
    """A server event type, or fields, the protocol does not (yet) have: kept, never fatal.

    Providers add events and fields often; one pmc does not know yet is kept in the trace and
    counted in the run's summary, so a user sees at once that the API has moved.
    """
    detail = {"type": UNKNOWN_SIGNAL, "event": event, "fields": sorted(fields), "message": message}
    return SystemEvent(EventKind.SIGNAL, arrival_ns, detail=detail)


def unknown_names(detail: dict[str, Any]) -> list[str]:
    """What an event's detail says was unknown (``event x``, ``field y``); [] for anything else."""
    if detail.get("type") != UNKNOWN_SIGNAL:
        return []
    names = [f"event {detail['event']}"] if detail.get("event") else []
    return names + [f"field {name}" for name in detail.get("fields", [])]


@dataclass(frozen=True)
class HistoryWord:
    """A word of the history, timed on the history's clock (seconds from its first sample).

    Full-duplex models are teacher-forced with the system's own words of the history.
    """

    text: str
    start_s: float
    end_s: float


@dataclass(frozen=True)
class Preload:
    """What a system hears before the live stream (docs/architecture.md "Protocol").

    Full-duplex systems take both speakers' audio; hosted systems take the completed turns as
    messages (the live turn then reaches them as audio like everyone else).

    Attributes:
        identity_prompt: Who the system is.
        user_audio: The other speaker's history, mono float32 at 24 kHz, ending where the live
            stream begins.
        system_audio: The system's own side of the same history.
        messages: The completed turns of the history as ``{"role", "text", ...}`` messages.
        seed: For systems that sample.
        endpointing: Whether the system's own endpointer decides when the live turn ends (pause
            points: a hosted system's turn detection is the policy under test). False where the
            harness ends the turn itself (turn-end and recall points: a hosted system's turn
            detection is off and it gets an explicit end of input, then a response request).
        system_words: The system's own words in the history, on the history's clock (seconds
            from its first sample): full-duplex models are teacher-forced with them.
        history_start_conv_s: Where the history audio's first sample lies on the conversation
            clock: a message's ``start_conv_s`` minus this is where its audio starts in
            ``user_audio`` or ``system_audio`` (hosted systems given the history as audio).
    """

    identity_prompt: str
    user_audio: FloatArray
    system_audio: FloatArray
    messages: list[dict[str, Any]]
    seed: int = 0
    endpointing: bool = True
    system_words: tuple[HistoryWord, ...] = ()
    history_start_conv_s: float = 0.0


@dataclass(frozen=True)
class ReferenceReply:
    """A human answer that only the reference systems are given, never a system under test.

    The person replays its own point's reply; the shuffled person another point's
    (docs/architecture.md "Systems"). Without ``audio`` the text is spoken by the bundled voice.

    Attributes:
        start_stream_s: When to start speaking, on the stream clock.
        text: What is said.
        audio: The recorded reply, mono float32 at 24 kHz, if there is one.
        source_point_id: The point the reply was taken from.
    """

    start_stream_s: float
    text: str
    audio: FloatArray | None = None
    source_point_id: str = ""


class ReferenceRow(StrEnum):
    """The reference rows reported beside the systems under test (paper section 4.3).

    The values are the rows' names in the report; the order is the report's.
    """

    NEVER_SPEAK = "never speak"
    ALWAYS_SPEAK = "always speak"
    PERSON = "the person, similarity ceiling"
    SHUFFLED = "shuffled person, similarity floor"


class SystemAdapter(ABC):
    """A connection to one system for one rollout.

    Every event's ``arrival_ns`` is read from ``clock`` when the message is received, before it
    is parsed. The stream clock's origin is the instant the first live sample was spoken: the
    first frame is sent one frame after it.
    """

    VERSION: ClassVar[str] = "1"
    """Written into every rollout; bump it when the adapter's behaviour changes."""
    TAKES_REFERENCE: ClassVar[bool] = False
    """Reference systems (the person) are handed the human reply; nothing else ever is."""
    REFERENCE: ClassVar[ReferenceRow | None] = None
    """The reference row this adapter plays (None: a system under test)."""
    EXTRA: ClassVar[str | None] = None
    """The optional extra the adapter needs (``pip install 'pmc[EXTRA]'``); None: none."""
    SENDS_TEXT: ClassVar[bool] = True
    """Whether the system's output carries its words as text. The stop rules wait for words
    before a reply counts; for a system that sends audio only (a phone agent) speech counts."""

    HEARS_WHILE_SPEAKING: ClassVar[bool] = True
    """Whether input sent while the system speaks reaches it, so that the person's talk over
    its reply at a talk-over point is heard (docs/architecture.md "Protocol"). A hosted system
    told where input ends hears nothing after it unless :meth:`listen` turns it back on."""
    ENDPOINTS_TALK_OVER: ClassVar[bool] = False
    """Whether at talk-over points its own endpointer decides the turn and stays on, as at a
    pause, instead of its being told where input ends: for a hosted API whose turn detection is
    set once, when the session opens (Gemini Live), so it cannot be turned back on to hear the
    person come in (docs/architecture.md "Protocol")."""
    PARAMS: ClassVar[type[Any]] = NoParams
    """The parameters a card's ``[params]`` may give it: a frozen dataclass whose fields say
    their types and defaults (:mod:`pmc.systems._params`)."""

    params: Any
    """The card's parameters as :attr:`PARAMS` (checked)."""

    def __init__(self, card: SystemCard, clock: Clock) -> None:
        self.card = card
        self.clock = clock
        self.params = adapter_params(card)

    @classmethod  # noqa: B027 - an optional hook: most adapters load nothing
    def prepare(cls, card: SystemCard) -> None:
        """Load, once per process, what every rollout of ``card`` needs (models, voices).

        Called before any real-time stream starts: loading a model while streams run would
        starve them of the processor.
        """

    @classmethod
    def latency_mark(cls, detail: Mapping[str, Any]) -> LatencyMark | None:
        """What moment of a reply's latency a signal the trace kept marks, if any.

        None by default: a system that reports neither its endpointer's decision nor its
        reply's request has its latency split at the first audio message and sample only.
        """
        return None

    @classmethod
    def reference_row(cls, card: SystemCard) -> ReferenceRow | None:
        """The reference row ``card`` plays with this adapter (None: a system under test)."""
        return cls.REFERENCE

    def give_reference(self, reference: ReferenceReply | None) -> None:
        """Hand a reference system the reply it replays (None: it stays silent)."""
        raise PmcError(f"system card {self.card.name}: {type(self).__name__} takes no reference")

    @abstractmethod
    async def connect(self) -> None:
        """Open the session."""

    @abstractmethod
    async def preload(self, preload: Preload) -> None:
        """Give the system the identity prompt and the history."""

    @abstractmethod
    async def send_frame(self, samples: FloatArray) -> None:
        """Send one live input frame."""

    @abstractmethod
    async def end_of_input(self) -> None:
        """Tell the system the user's turn has ended (hosted turn-end protocol)."""

    async def listen(self) -> None:  # noqa: B027 - an optional hook: most systems always hear
        """From now on the system must hear the person.

        Its reply has started at a talk-over point after it was told where input ended (a hosted
        API's turn detection goes back on).
        """

    @abstractmethod
    def events(self) -> AsyncIterator[SystemEvent]:
        """Everything the system sends, in arrival order, until it is closed."""

    @abstractmethod
    async def close(self) -> None:
        """End the session."""


AdapterFactory = type[SystemAdapter]
"""Adapters register their class: its VERSION, TAKES_REFERENCE and prepare() are read before
any rollout, its reference_row() by the report, and calling it with (card, clock) makes one."""
ADAPTER_GROUP = "pmc.adapters"
"""The entry-point group where a package declares adapters of its own (docs/architecture.md
"Adapters from other packages")."""
ADAPTERS: Registry[AdapterFactory] = Registry("system adapter", ADAPTER_GROUP)
"""Adapter classes by the name cards give in ``adapter = "..."``, with those other packages
declare in :data:`ADAPTER_GROUP`."""
register_adapter = ADAPTERS.register
"""Decorator: register an adapter class under the name cards use."""


def adapter_factory(card: SystemCard) -> AdapterFactory:
    """The registered factory a card names; an unknown name says which ones exist."""
    factory = ADAPTERS.get(card.adapter)
    if factory is None:
        known = ADAPTERS.known() or "none registered yet"
        raise PmcError(f"system card {card.name}: unknown adapter {card.adapter!r} ({known})")
    return factory


def adapter_params(card: SystemCard) -> Any:
    """A card's parameters as its adapter's record; a wrong one says which card and key."""
    try:
        return parse_params(adapter_factory(card).PARAMS, card.params, card.adapter)
    except ParamError as exc:
        raise PmcError(f"system card {card.name}: {exc}") from None


def create_adapter(card: SystemCard, clock: Clock) -> SystemAdapter:
    """A new adapter for one rollout of the system a card names."""
    return adapter_factory(card)(card, clock)


def reference_row_of(card: SystemCard) -> ReferenceRow | None:
    """The reference row a card plays, asked of its adapter (None: a system under test).

    The reference adapters are built in and always registered, so an adapter name that is not
    registered (a test double, an adapter of another version) is a system under test.
    """
    factory = ADAPTERS.get(card.adapter)
    return None if factory is None else factory.reference_row(card)
