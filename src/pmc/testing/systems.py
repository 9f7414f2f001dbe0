"""A scripted in-process system: says given things at given stream times, or fails on purpose.

For tests of the protocol and the run stage. A card with ``adapter = "scripted"`` takes
``params.say``: a list of ``{"at_s", "seconds", "text", "rms"}`` (a tone of that length and
loudness starting at that stream time, with its text; with ``"spoken": true`` the text itself
in Piper's voice instead of the tone). With ``params.yield_ms`` it stops speaking that long after
it first hears input while it speaks (a person's talk over its reply), and says when it heard it
and when it stopped in the ``interrupted`` event's detail. ``params.stall_ms`` makes it block
the whole process for that long on its 50th frame, as a badly behaved in-process model would.

A card with ``adapter = "held"`` says nothing and does not connect until the file
``params.release`` exists: a run that cannot finish until a test lets it (the kill-and-resume
test kills such a run mid-way on any machine, however fast).

A card with ``adapter = "gated"`` opens a session, waits at a :class:`SessionGate` until every
rollout in flight waits there too, then is refused: the gate counts the sessions held at once,
which the run's and the card's concurrency limits must bound. A card with ``adapter =
"stalled"`` stalls in its connect or its preload for ``params.stall_s``, as a server that does
not answer a handshake would: the harness's connect-and-preload limit must end it first.

A card with ``adapter = "limited"`` is let in or refused by a :class:`RateLimiter`, as a hosted
API with a session limit would: refused with a retry-after when too many sessions are open.
Each session it lets in sends an event type and a field pmc does not know, as an API that has
moved on would; it says nothing else.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from pmc.audio import FloatArray
from pmc.clock import Clock
from pmc.systems import (
    EventKind,
    LocalAdapter,
    Preload,
    RetryReason,
    SystemCard,
    TransportError,
    register_adapter,
    unknown_signal,
)

HEAR_LEVEL = 1e-4
"""A scripted system that yields hears any input sample above this (the silence it is sent
between the turn and the clip is exact zeros)."""


def tone(seconds: float, rms: float = 0.1, rate: int = 24_000, hz: float = 220.0) -> FloatArray:
    """A sine tone with the given RMS (a stand-in for speech that opens the gate)."""
    t = np.arange(round(seconds * rate)) / rate
    wave = rms * np.sqrt(2) * np.sin(2 * np.pi * hz * t)
    return np.asarray(wave, dtype=np.float32)


def _audio(item: dict[str, Any]) -> FloatArray:
    """What a line of the script sounds like: its text in Piper's voice, or a tone."""
    if item.get("spoken"):
        from pmc.testing.speech import spoken

        return spoken(str(item["text"]))
    return tone(float(item["seconds"]), float(item.get("rms", 0.1)))


@dataclass(frozen=True)
class ScriptedParams:
    """A scripted card's ``[params]``."""

    say: list[dict[str, Any]] = field(default_factory=list)
    yield_ms: float | None = None
    stall_ms: float | None = None


@register_adapter("scripted")
class ScriptedSystem(LocalAdapter):
    """Speaks a script; fails where the test says.

    Class attributes let a test make it fail without changing its card (a changed card would be
    a different system): the next ``refuse`` connections are refused; with ``drop_after_frames``
    the session closes mid-stream after that many frames.
    """

    refuse: ClassVar[int] = 0
    drop_after_frames: ClassVar[int | None] = None
    PARAMS: ClassVar[type[Any]] = ScriptedParams
    params: ScriptedParams

    def __init__(self, card: SystemCard, clock: Clock) -> None:
        super().__init__(card, clock)
        self.commits: list[int] = []
        self.heard_stream_s: float | None = None
        """With ``params.yield_ms``: when it heard input while speaking (stream clock)."""
        self._speaking: list[asyncio.Task[None]] = []
        self.frames_received = 0
        self.samples_received = 0
        # Voiced here, before the stream starts: never inside the real-time loop.
        self._script = [(dict(line), _audio(dict(line))) for line in self.params.say]

    async def connect(self) -> None:
        """Refuse if told to."""
        if ScriptedSystem.refuse > 0:
            ScriptedSystem.refuse -= 1
            raise TransportError("connection refused (scripted)")

    def on_start(self) -> None:
        """Schedule the script."""
        for item, audio in self._script:
            at = self.stream_ns(float(item["at_s"]))
            task = asyncio.get_running_loop().create_task(
                self.speak_at(at, audio, str(item.get("text", "")), 0.2)
            )
            self._speaking.append(task)
            self._tasks.append(task)

    def _talking_at(self, t_stream_s: float) -> bool:
        """Whether the script has it speaking at a stream time."""
        rate = self.card.sample_rate
        return any(
            float(item["at_s"]) <= t_stream_s < float(item["at_s"]) + len(audio) / rate
            for item, audio in self._script
        )

    def _hear(self, samples: FloatArray) -> None:
        """With ``params.yield_ms``: input heard while speaking stops it that long after."""
        yield_ms = self.params.yield_ms
        if yield_ms is None or self.heard_stream_s is not None:
            return
        loud = np.flatnonzero(np.abs(samples) > HEAR_LEVEL)
        if not loud.size:
            return
        rate = self.card.sample_rate
        heard = ((self.frames_received - 1) * self.card.frame_samples + int(loud[0])) / rate
        if self._talking_at(heard):
            self.heard_stream_s = heard
            self.spawn(self._stop_at(heard, heard + float(yield_ms) / 1000))

    async def _stop_at(self, heard_s: float, stop_s: float) -> None:
        """Stop speaking at ``stop_s``, and say so with the record of when it heard the input."""
        await self.clock.sleep_until(self.stream_ns(stop_s))
        for task in self._speaking:
            task.cancel()
        detail = {"heard_stream_s": round(heard_s, 6), "stopped_stream_s": round(stop_s, 6)}
        self.emit(EventKind.INTERRUPTED, detail=detail)

    async def on_frame(self, samples: FloatArray) -> None:
        """Count frames; stop speaking if told to; drop the session if told to."""
        self.frames_received += 1
        self.samples_received += len(samples)
        self._hear(samples)
        stall_ms = self.params.stall_ms
        if stall_ms and self.frames_received == 50:
            time.sleep(float(stall_ms) / 1000)  # noqa: ASYNC251 - blocks the loop on purpose
        if self.drop_after_frames is not None and self.frames_received > self.drop_after_frames:
            raise TransportError("connection closed by the system (scripted)")

    async def end_of_input(self) -> None:
        """Note when input was ended."""
        self.commits.append(self.clock.now_ns())


@dataclass(frozen=True)
class HeldParams:
    """A held card's ``[params]``: ``release`` is required."""

    release: str
    waiting: str | None = None


@register_adapter("held")
class HeldSystem(LocalAdapter):
    """Listens and says nothing, like never-speak, but connects only once a file exists.

    ``params.release`` names the file. While it is missing, :meth:`connect` polls for it without
    blocking the event loop and, if ``params.waiting`` names a file, first writes the id of the
    process it waits in there, so a test can see that the run has reached a held rollout (and
    where). The harness allows connecting
    ``params.preload_timeout_s``; a card for this adapter sets it far beyond any test, so that
    waiting is never a failed connection. On a virtual clock waiting leaves no mark: its time
    stands still until the stream starts, so a held rollout records exactly what an unheld one
    does.
    """

    POLL_S = 0.01
    """How often the release file is looked for: 10 ms, short next to a rollout."""
    PARAMS: ClassVar[type[Any]] = HeldParams
    params: HeldParams

    async def connect(self) -> None:
        """Wait until the release file exists."""
        release = Path(self.params.release)
        waiting = self.params.waiting
        if waiting is not None and not await asyncio.to_thread(release.exists):
            # The process it waits in, for a test that kills it (a Ray worker's, say).
            await asyncio.to_thread(Path(str(waiting)).write_text, str(os.getpid()))
        while not await asyncio.to_thread(release.exists):  # noqa: ASYNC110 - no file event
            await asyncio.sleep(self.POLL_S)


class SessionGate:
    """Holds sessions open until every rollout in flight holds one, and counts them.

    The harness's limits decide how many rollouts are in flight; the test reports each rollout
    entering and leaving the limited section (:meth:`entered`, :meth:`left`). A ``gated``
    session opens at connect and waits in its preload until every rollout in flight waits too,
    so all the sessions the limits allow are open at once, and a limit that lets more through
    shows in the first wave. Progress alone releases the gate: nothing waits on the clock, so
    the counts are the same on any machine.
    """

    def __init__(self) -> None:
        self.in_flight = 0
        """Rollouts in the harness's limited section now."""
        self.open: Counter[str] = Counter()
        """Sessions open now (connected, not yet closed), per card."""
        self.most: Counter[str] = Counter()
        """The most sessions each card had open at once."""
        self.most_total = 0
        """The most sessions open at once over all cards."""
        self.waves: list[int] = []
        """How many sessions each opening of the gate let go, in order."""
        self._waiting: list[asyncio.Future[None]] = []

    def entered(self) -> None:
        """A rollout has entered the limited section."""
        self.in_flight += 1

    def left(self) -> None:
        """A rollout has left it (the sessions waiting may now be all there is)."""
        self.in_flight -= 1
        self._open_if_all_wait()

    def opened(self, card: str) -> None:
        """A session of ``card`` has opened."""
        self.open[card] += 1
        self.most[card] = max(self.most[card], self.open[card])
        self.most_total = max(self.most_total, sum(self.open.values()))

    def closed(self, card: str) -> None:
        """A session of ``card`` has closed."""
        self.open[card] -= 1

    async def hold(self) -> None:
        """Wait until every rollout in flight waits here."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        self._open_if_all_wait()
        await waiter

    def _open_if_all_wait(self) -> None:
        if self._waiting and len(self._waiting) >= self.in_flight:
            self.waves.append(len(self._waiting))
            for waiter in self._waiting:
                if not waiter.done():
                    waiter.set_result(None)
            self._waiting = []


@register_adapter("gated")
class GatedSystem(LocalAdapter):
    """Opens a session, waits at :attr:`gate`, then refuses it, as a failed handshake would.

    The gate (set by the test) counts the card's sessions from connect to close. Refused
    sessions take no streaming time, so a run of many rollouts ends as soon as the gate lets
    them go, on the real clock as on the virtual one.
    """

    gate: ClassVar[SessionGate | None] = None

    def __init__(self, card: SystemCard, clock: Clock) -> None:
        super().__init__(card, clock)
        self._is_open = False

    def _gate(self) -> SessionGate:
        if GatedSystem.gate is None:
            raise RuntimeError("set GatedSystem.gate before running a gated card")
        return GatedSystem.gate

    async def connect(self) -> None:
        """Open: the gate counts the session."""
        self._gate().opened(self.card.name)
        self._is_open = True

    async def preload(self, preload: Preload) -> None:
        """Wait at the gate, then refuse the session."""
        await self._gate().hold()
        raise TransportError("session refused once its gate opened (gated)")

    async def close(self) -> None:
        """Close: the gate stops counting the session."""
        if self._is_open:
            self._is_open = False
            self._gate().closed(self.card.name)
        await super().close()


@dataclass(frozen=True)
class StalledParams:
    """A stalled card's ``[params]``."""

    stall: Literal["connect", "preload"] = "connect"
    stall_s: float | None = None


@register_adapter("stalled")
class StalledSystem(LocalAdapter):
    """Stalls in its connect or its preload (``params.stall``), for ``params.stall_s``.

    It waits on the event loop's time, as the harness's connect-and-preload limit does, so
    when a test sets that limit below the stall, the limit ends it first on any machine. A
    stall that runs out fails the session with a cause that says no limit ended it.
    :attr:`closed` counts sessions closed (the harness must close one it gave up on).
    """

    STALL_S = 5.0
    """Default stall: far beyond a test's limit (tens of ms), and short enough that a test
    whose limit is not enforced fails in seconds instead of hanging."""
    closed: ClassVar[int] = 0
    PARAMS: ClassVar[type[Any]] = StalledParams
    params: StalledParams

    async def connect(self) -> None:
        """Stall here if ``params.stall`` is ``connect``."""
        await self._stall("connect")

    async def preload(self, preload: Preload) -> None:
        """Stall here if ``params.stall`` is ``preload``."""
        await self._stall("preload")

    async def _stall(self, where: str) -> None:
        if self.params.stall != where:
            return
        stall_s = float(self.STALL_S if self.params.stall_s is None else self.params.stall_s)
        await asyncio.sleep(stall_s)
        raise TransportError(f"stalled {stall_s:g} s in {where} and no limit ended it (stalled)")

    async def close(self) -> None:
        """Count the close."""
        StalledSystem.closed += 1
        await super().close()


@dataclass(frozen=True)
class Arrival:
    """A session that reached a :class:`RateLimiter`: whose (the rollout's seed), when, refused."""

    seed: int
    at_s: float
    """On the event loop's clock."""
    refused: bool


class RateLimiter:
    """A server's session limit: refuses a session while ``max_open`` are open, ``refusals`` times.

    A refusal is a :class:`TransportError` marked passing (``reason``) with ``retry_after_s``.
    While refusals remain, a session it lets in waits until they have all been made, so those
    sessions are open together and the refusals come as one burst (the harness must step its
    limit down once for it). Progress alone releases them: the same on any machine.
    """

    def __init__(
        self,
        max_open: int,
        refusals: int,
        retry_after_s: float = 0.05,
        reason: RetryReason = RetryReason.RATE_LIMITED,
    ) -> None:
        self.max_open = max_open
        self.refusals = refusals
        self.retry_after_s = retry_after_s
        self.reason = reason
        self.open = 0
        """Sessions let in and not yet closed."""
        self.most_open = 0
        """The most sessions open at once."""
        self.refused = 0
        self.arrivals: list[Arrival] = []
        """Every session that asked to be let in, in order."""
        self._spent = asyncio.Event()

    async def admit(self, seed: int) -> None:
        """Let the session of rollout ``seed`` in, or refuse it."""
        now = asyncio.get_running_loop().time()
        if self.refused < self.refusals and self.open >= self.max_open:
            self.refused += 1
            self.arrivals.append(Arrival(seed, now, refused=True))
            if self.refused == self.refusals:
                self._spent.set()
            raise TransportError(
                f"HTTP 429: {self.open} sessions are open already (limited)",
                retry=self.reason,
                retry_after_s=self.retry_after_s,
            )
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        self.arrivals.append(Arrival(seed, now, refused=False))
        if self.refused < self.refusals:
            await self._spent.wait()

    def left(self) -> None:
        """A session it let in has closed."""
        self.open -= 1


@register_adapter("limited")
class LimitedSystem(LocalAdapter):
    """Asks :attr:`limiter` to let it in at preload; then sends what pmc does not know.

    Once the stream starts it sends one message of an unknown type (:attr:`UNKNOWN_EVENT`) and
    one with an unknown field (:attr:`UNKNOWN_FIELD`); the harness keeps both as signals.
    """

    limiter: ClassVar[RateLimiter | None] = None
    UNKNOWN_EVENT = "response.hologram.delta"
    UNKNOWN_FIELD = "serverHologram"

    def __init__(self, card: SystemCard, clock: Clock) -> None:
        super().__init__(card, clock)
        self._let_in = False

    def _limiter(self) -> RateLimiter:
        if LimitedSystem.limiter is None:
            raise RuntimeError("set LimitedSystem.limiter before running a limited card")
        return LimitedSystem.limiter

    async def preload(self, preload: Preload) -> None:
        """Be let in, or refused."""
        await super().preload(preload)
        await self._limiter().admit(preload.seed)
        self._let_in = True

    def on_start(self) -> None:
        """Send an unknown event and an unknown field."""
        now = self.clock.now_ns()
        event: dict[str, Any] = {"type": self.UNKNOWN_EVENT, "delta": "AAAA"}
        unknown = unknown_signal(now, event, event=self.UNKNOWN_EVENT)
        self.emit(EventKind.SIGNAL, detail=unknown.detail)
        field: dict[str, Any] = {"type": "session.updated", self.UNKNOWN_FIELD: {"on": True}}
        unknown = unknown_signal(now, field, fields=[self.UNKNOWN_FIELD])
        self.emit(EventKind.SIGNAL, detail=unknown.detail)

    async def close(self) -> None:
        """Leave the limiter."""
        if self._let_in:
            self._let_in = False
            self._limiter().left()
        await super().close()
