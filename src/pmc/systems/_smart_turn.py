"""Pipecat's own turn stack as a local system: Silero VAD, then Smart Turn v3.2 decides the turn.

The endpointer cascade (``_endpointer``) ends a turn after a fixed window of silence. This system
asks Pipecat 1.14's classes instead, fed the way a Pipecat bot feeds them
(``pipecat/turns/user_stop/turn_analyzer_user_turn_stop_strategy.py``): each input frame goes to
``LocalSmartTurnAnalyzerV3.append_audio`` and then to ``SileroVADAnalyzer``. When the VAD reports
the user stopped (after its ``stop_secs`` of quiet) the Smart Turn model judges the buffered
speech; if it says complete, the turn ends there, otherwise the analyzer's own silence fallback
(``SmartTurnParams.stop_secs``, 3 s) ends it. The reply half is the cascade's
(:func:`speak_reply`), so the two differ only in who decides the turn.

Model time is never free: on a virtual clock each Smart Turn inference advances the clock by its
measured wall time, and frames that arrive meanwhile wait in a queue, as they wait in a Pipecat
processor's. Pipecat is imported only here, and only when a card uses it (the ``pipecat`` extra).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import soxr

from pmc.audio import FloatArray, to_pcm16
from pmc.clock import NS_PER_S, Clock, VirtualClock
from pmc.errors import PmcError
from pmc.models import Model, verify
from pmc.systems._adapter import EventKind, LatencyMark, adapter_params, register_adapter
from pmc.systems._card import SystemCard
from pmc.systems._endpointer import REPLY_TEXT, number, speak_reply, voiced, warm_asr
from pmc.systems._local import LocalAdapter

INSTALL_HINT = "the smart-turn cards need Pipecat: pip install 'pmc[pipecat]'"

PIPECAT_RATE = 16_000
"""Silero takes 8 or 16 kHz, and Smart Turn's model 16 kHz (it would resample 8 kHz itself)."""

REPLY_LATENCY_MS = 1000
"""From the turn's end to the reply's first sample when a card sets none: the endpointer cards'
value, so the two systems' replies differ only by when the turn ended."""

VAD_KEYS = ("confidence", "start_secs", "stop_secs", "min_volume")
"""``VADParams`` fields a card may set as ``turn_detection.vad_<field>``."""

TURN_KEYS = ("stop_secs", "pre_speech_ms", "max_duration_secs")
"""``SmartTurnParams`` fields a card may set as ``turn_detection.smart_turn_<field>``."""


class _RolloutTime:
    """Stands in for the ``time`` module inside Pipecat's ``base_smart_turn``.

    The analyzer stamps each frame with ``time.monotonic()`` and picks the audio it judges by those
    stamps (speech start minus ``pre_speech_ms``). Set to the rollout's clock while a frame is
    appended, it gives the same choice on a virtual clock as on a real one.
    """

    def __init__(self) -> None:
        self.now_s: float | None = None

    def monotonic(self) -> float:
        return time.monotonic() if self.now_s is None else self.now_s

    def perf_counter(self) -> float:
        return time.perf_counter()

    @contextlib.contextmanager
    def at(self, clock: Clock) -> Iterator[None]:
        self.now_s = clock.now_ns() / NS_PER_S
        try:
            yield
        finally:
            self.now_s = None


ROLLOUT_TIME = _RolloutTime()


class _Inline(Executor):
    """Runs each call at once, in the caller's thread.

    Pipecat's model calls use it on a virtual clock, which would see time jump past a call
    running in a thread.
    """

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # handed to the awaiting task, as a thread's would be
            future.set_exception(exc)
        return future


def pipecat() -> dict[str, Any]:
    """Pipecat's modules this system uses, by short name; without the extra, a ``PmcError``."""
    try:
        loguru = importlib.import_module("loguru")
        loguru.logger.disable("pipecat")  # its banner and ~40 debug lines per turn
        modules: dict[str, Any] = {
            "silero": importlib.import_module("pipecat.audio.vad.silero"),
            "vad": importlib.import_module("pipecat.audio.vad.vad_analyzer"),
            "turn": importlib.import_module("pipecat.audio.turn.base_turn_analyzer"),
            "smart": importlib.import_module("pipecat.audio.turn.smart_turn.base_smart_turn"),
            "v3": importlib.import_module("pipecat.audio.turn.smart_turn.local_smart_turn_v3"),
        }
    except ImportError:
        raise PmcError(INSTALL_HINT) from None
    verify(Model.SMART_TURN)
    modules["smart"].time = ROLLOUT_TIME
    return modules


def card_settings(card: SystemCard, prefix: str, keys: tuple[str, ...]) -> dict[str, float]:
    """The card's ``turn_detection.<prefix><key>`` numbers, by Pipecat's field name."""
    table = card.turn_detection
    return {k: number(card, table, prefix + k, 0.0) for k in keys if prefix + k in table}


@functools.cache
def _warm_models() -> None:
    """Load both ONNX models once per process, so the first rollout's connect is not slow."""
    modules = pipecat()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        modules["silero"].SileroVADAnalyzer(sample_rate=PIPECAT_RATE)
        modules["v3"].LocalSmartTurnAnalyzerV3(sample_rate=PIPECAT_RATE)


@dataclass(frozen=True)
class SmartTurnParams:
    """A Smart Turn cascade card's ``[params]``."""

    reply_latency_ms: float = REPLY_LATENCY_MS
    """From the turn's end (Smart Turn's decision) to the reply's first sample."""
    reply_text: str = REPLY_TEXT
    interruptions: bool = True
    """Whether speech over its reply stops it, as Pipecat's interruptions do."""


@register_adapter("pipecat-smart-turn")
class SmartTurnCascade(LocalAdapter):
    """Pipecat's Silero VAD and Smart Turn v3.2 end the turn; the cascade's reply follows.

    Card settings: ``turn_detection.vad_<field>`` for ``VADParams`` (confidence, start_secs,
    stop_secs, min_volume) and ``turn_detection.smart_turn_<field>`` for ``SmartTurnParams``
    (stop_secs, pre_speech_ms, max_duration_secs), Pipecat's defaults where unset;
    ``params.reply_latency_ms`` and ``params.reply_text`` as for the endpointer cascade.

    Each Smart Turn verdict is kept in the trace as a signal (``smart_turn``: probability,
    ``inference_ms``); so is an end of turn that only the silence fallback decided. Half duplex:
    while its reply is pending or playing the VAD still listens but no turn ends. Once the
    reply plays, the VAD reporting that the user started speaking stops it, as Pipecat's
    default interruption does (``params.interruptions``, true unless a card says false).
    """

    VERSION = "1"
    EXTRA = "pipecat"
    PARAMS: ClassVar[type[Any]] = SmartTurnParams
    params: SmartTurnParams

    def __init__(self, card: SystemCard, clock: Clock) -> None:
        super().__init__(card, clock)
        known = {f"vad_{k}" for k in VAD_KEYS} | {f"smart_turn_{k}" for k in TURN_KEYS}
        unknown = sorted(set(card.turn_detection) - known)
        if unknown:
            raise PmcError(
                f"system card {card.name}: unknown turn_detection key(s) {', '.join(unknown)} "
                f"(known: {', '.join(sorted(known))})"
            )
        self.vad_params = card_settings(card, "vad_", VAD_KEYS)
        self.turn_params = card_settings(card, "smart_turn_", TURN_KEYS)
        latency_ms = float(self.params.reply_latency_ms)
        settings = [latency_ms, *self.vad_params.values(), *self.turn_params.values()]
        if min(settings) < 0:
            raise PmcError(f"system card {card.name}: settings must not be negative")
        self.reply_text = self.params.reply_text
        self.reply_latency_ns = round(latency_ms * NS_PER_S / 1000)
        self.interruptions = self.params.interruptions
        self._reply_task: asyncio.Task[None] | None = None
        self._speaking_from_ns: int | None = None
        # HQ like pmc.audio.resample, streamed so that frame edges leave no seams.
        self._resampler = soxr.ResampleStream(
            card.sample_rate, PIPECAT_RATE, 1, dtype="float32", quality="HQ"
        )
        self._inbox: asyncio.Queue[FloatArray] = asyncio.Queue()
        self._utterance: list[FloatArray] = []
        self._replying = False
        self._user_speaking = False
        self._vad: Any = None
        self._turn: Any = None
        self._vad_state: Any = None
        self._modules: dict[str, Any] = {}

    @classmethod
    def latency_mark(cls, detail: Mapping[str, Any]) -> LatencyMark | None:
        """Smart Turn's verdict that the turn is complete, or its silence fallback."""
        complete = detail.get("type") == "smart_turn" and detail.get("complete") is True
        if complete or detail.get("type") == "smart_turn_timeout":
            return LatencyMark.ENDPOINTED
        return None

    @classmethod
    def prepare(cls, card: SystemCard) -> None:
        """Check Pipecat is installed; load its models, the recogniser and the voice once."""
        pipecat()
        _warm_models()
        warm_asr()
        voiced(adapter_params(card).reply_text)

    async def connect(self) -> None:
        """Build this rollout's analyzers and start listening, before the stream starts."""
        self._modules = modules = pipecat()
        await self.clock.run_blocking(warm_asr)
        await self.clock.run_blocking(lambda: voiced(self.reply_text))
        self._vad, self._turn = await self.clock.run_blocking(self._analyzers)
        self._vad_state = modules["vad"].VADState.QUIET
        self.spawn(self._listen())

    def _analyzers(self) -> tuple[Any, Any]:
        modules = self._modules
        with warnings.catch_warnings():  # Pipecat finds its models with a deprecated call
            warnings.simplefilter("ignore", DeprecationWarning)
            vad, turn = self._new_analyzers(modules)
        vad.set_sample_rate(PIPECAT_RATE)  # what a pipeline's setup does
        turn.set_sample_rate(PIPECAT_RATE)
        if isinstance(self.clock, VirtualClock):
            vad._executor.shutdown(wait=False)
            vad._executor = _Inline()
            turn._executor = _Inline()
        return vad, turn

    def _new_analyzers(self, modules: dict[str, Any]) -> tuple[Any, Any]:
        vad = modules["silero"].SileroVADAnalyzer(
            sample_rate=PIPECAT_RATE, params=modules["vad"].VADParams(**self.vad_params)
        )
        turn = modules["v3"].LocalSmartTurnAnalyzerV3(
            sample_rate=PIPECAT_RATE, params=modules["smart"].SmartTurnParams(**self.turn_params)
        )
        return vad, turn

    async def on_frame(self, samples: FloatArray) -> None:
        """Queue the frame for the listener, so inference never holds up the stream."""
        self._inbox.put_nowait(np.asarray(samples, dtype=np.float32).ravel())

    async def close(self) -> None:
        """Stop listening and release Pipecat's model threads."""
        await super().close()
        for analyzer in (self._vad, self._turn):
            if analyzer is not None:
                await analyzer.cleanup()

    async def _listen(self) -> None:
        while True:
            await self._hear(await self._inbox.get())

    async def _hear(self, frame: FloatArray) -> None:
        """One input frame, in a Pipecat pipeline's order: turn analyzer first, then the VAD."""
        if not self._replying:
            # Kept before resampling: the stream resampler returns nothing for some frames (it
            # releases their samples with a later one), and the reply transcribes every frame.
            self._utterance.append(frame)
        pcm = to_pcm16(self._resampler.resample_chunk(frame)).tobytes()
        if not pcm:
            return
        complete = self._modules["turn"].EndOfTurnState.COMPLETE
        if not self._replying:
            with ROLLOUT_TIME.at(self.clock):
                state = self._turn.append_audio(pcm, self._user_speaking)
            if state == complete:  # the silence fallback: no model verdict
                self.emit(EventKind.SIGNAL, detail={"type": "smart_turn_timeout"})
                self._end_turn()
        states = self._modules["vad"].VADState
        state = await self._vad.analyze_audio(pcm)
        if state == self._vad_state or state in (states.STARTING, states.STOPPING):
            return
        self._vad_state = state
        self._user_speaking = state == states.SPEAKING
        if self._replying:
            if self._user_speaking:
                self._barge_in()
            return
        if self._user_speaking:
            self._turn.update_vad_start_secs(self._vad.params.start_secs)
        elif await self._judge() == complete:
            self._end_turn()

    async def _judge(self) -> Any:
        """Smart Turn's verdict on the buffered speech, after its measured inference time."""
        start_ns, wall_ns = self.clock.now_ns(), time.perf_counter_ns()
        state, metrics = await self._turn.analyze_end_of_turn()
        spent_ns = time.perf_counter_ns() - wall_ns
        # On a real clock the time has passed already; on a virtual one this is where it passes.
        await self.clock.sleep_until(start_ns + spent_ns)
        if metrics is not None:
            detail = {
                "type": "smart_turn",
                "complete": bool(metrics.is_complete),
                "probability": float(metrics.probability),
                "inference_ms": spent_ns / 1e6,
            }
            self.emit(EventKind.SIGNAL, detail=detail)
        return state

    def _end_turn(self) -> None:
        """Pipecat hands the turn to the bot: reply after the set latency."""
        utterance = np.concatenate(self._utterance)
        self._utterance = []
        self._replying = True
        start_ns = self.clock.now_ns() + self.reply_latency_ns
        self._speaking_from_ns = start_ns
        self._reply_task = asyncio.get_running_loop().create_task(self._reply(start_ns, utterance))
        self._tasks.append(self._reply_task)

    def _barge_in(self) -> None:
        """The user started speaking while the reply plays: stop it and listen again."""
        start = self._speaking_from_ns
        if not self.interruptions or start is None or self.clock.now_ns() < start:
            return
        if self._reply_task is not None:
            self._reply_task.cancel()
        self.emit(EventKind.INTERRUPTED, detail={"barge_in": True})
        self._listen_again()
        self._turn.update_vad_start_secs(self._vad.params.start_secs)

    def _listen_again(self) -> None:
        self._turn.clear()  # as the stop strategy does when a turn has ended
        self._utterance = []
        self._replying = False
        self._speaking_from_ns = None
        self._reply_task = None

    async def _reply(self, start_ns: int, utterance: FloatArray) -> None:
        await speak_reply(self, start_ns, utterance, self.reply_text)
        self._listen_again()
