"""The endpointer cascade: a silence endpointer, a recogniser, an extractive reply, a voice.

The simplest system that takes turns the way hosted server VAD does (docs/architecture.md
"Systems"): Silero VAD decides that the user has stopped once speech is followed by a set window of
silence, the utterance is transcribed, and after a fixed latency the system speaks. At a question it
answers with the sentence of the history that shares the most content words with it, so recall
points can be scored; otherwise it says a fixed acknowledgement. It is half duplex: while its reply
is pending or playing it ignores further endpoints, and stops the reply when it hears speech for
a set time (a barge-in, as Pipecat's default interruption does).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import math
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import soxr

from pmc.asr import Transcriber, create_transcriber
from pmc.audio import SAMPLE_RATE, FloatArray, resample
from pmc.clock import NS_PER_S, Clock
from pmc.errors import PmcError
from pmc.systems._adapter import EventKind, LatencyMark, adapter_params, register_adapter
from pmc.systems._baselines import CHUNK_S, spoken
from pmc.systems._card import SystemCard
from pmc.systems._local import LocalAdapter
from pmc.systems._vad import VAD_RATE, WINDOW, StreamingVad, load_model

THRESHOLD = 0.5
"""Speech probability at which speech starts: Silero's default, and hosted server VAD's."""

HYSTERESIS = 0.15
"""Silence is a probability below ``threshold - 0.15`` (Silero's ``neg_threshold``)."""

MIN_SPEECH_MS = 250
"""Shorter speech does not end a turn (Silero's default ``min_speech_duration_ms``)."""

SILENCE_MS = 500
"""Silence window when a card sets none (hosted server VAD's default ``silence_duration_ms``)."""

REPLY_LATENCY_MS = 400
"""From the endpoint to the reply's first sample, when a card sets none (the bundled cards'
value)."""

INTERRUPT_MS = 200
"""Speech heard this long while the reply plays stops it, when a card sets none: Pipecat's
default interruption, which stops the bot when its VAD reports the user started speaking, after
``VADParams.start_secs`` of 0.2 s (docs/architecture.md "Systems")."""

ENDPOINTED = "endpointed"
"""The signal the cascade records when its silence window closes on the turn."""
REPLY_TEXT = "I see. Tell me more about that."
"""What the system says when it has nothing to quote."""

WH_WORDS = frozenset({"what", "when", "where", "which", "who", "whom", "whose", "why", "how"})
"""Words an open question starts with."""

AUXILIARIES = frozenset(
    {
        "am", "is", "are", "was", "were", "do", "does", "did", "have", "has", "had", "can",
        "could", "will", "would", "shall", "should", "may", "might", "must",
    }
)  # fmt: skip
"""Words a yes/no question starts with (recognition sometimes leaves off the question mark)."""

STOP_WORDS = (
    WH_WORDS
    | AUXILIARIES
    | frozenset(
        """
        a an the this that these those there here i me my mine we us our ours you your yours he
        him his she her hers it its they them their theirs myself yourself itself and or but so
        if then than because as of to in on at by for with from about into over after before up
        down out off again not no nor just too very also only own same such some any all both
        each few more most other be been being isn aren wasn weren don doesn didn haven hasn
        hadn couldn wouldn shouldn won ll ve re d s t m oh um uh yeah yes okay ok well like
        really get got go going went say said tell told think know one thing things
        """.split()
    )
)
"""Words that carry no topic: function words (a subset of NLTK's English list, which also splits
contractions at the apostrophe), conversational fillers, and very common verbs."""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")

# On a real clock rollouts transcribe and speak in worker threads: each model loads once and
# runs one call at a time.
_ASR_LOCK = threading.Lock()
_TTS_LOCK = threading.Lock()


@functools.cache
def transcriber() -> Transcriber:
    """The bundled faster-whisper tiny.en, created once per process (it loads on first use)."""
    return create_transcriber()


QUIET = 1e-3
"""Leading and trailing samples below this are cut before recognising (and before the cache
key is made): the 300 and 500 ms cards hear the same utterance with more or less silence after
it, and recognise it once between them."""
_HEARD: dict[str, str] = {}


def transcript(audio: FloatArray) -> str:
    """What was said in 24 kHz ``audio``, as recognised text (remembered per utterance)."""
    loud = np.flatnonzero(np.abs(audio) >= QUIET)
    if not loud.size:
        return ""
    trimmed = np.ascontiguousarray(audio[loud[0] : loud[-1] + 1])
    key = hashlib.sha256(trimmed.tobytes()).hexdigest()
    with _ASR_LOCK:
        if key not in _HEARD:
            _HEARD[key] = transcriber().text(trimmed)
        return _HEARD[key]


@functools.cache
def warm_asr() -> None:
    """Load the recogniser by transcribing 100 ms of silence, once per process."""
    transcript(np.zeros(SAMPLE_RATE // 10, dtype=np.float32))


def voiced(text: str) -> FloatArray:
    """``text`` in the bundled voice, synthesised once per process per text."""
    with _TTS_LOCK:
        return spoken(text)


def sentences(text: str) -> list[str]:
    """``text`` split after each ``.``, ``!`` or ``?`` that ends a sentence."""
    return [s for s in _SENTENCE_END.split(text.strip()) if s]


def content_words(text: str) -> set[str]:
    """Lower-cased words of ``text`` minus stop words; a contraction counts as its first part."""
    words = (w.split("'")[0] for w in _WORD.findall(text.lower()))
    return {w for w in words if w not in STOP_WORDS}


def is_question(sentence: str) -> bool:
    """A sentence that ends with ``?`` or starts with a wh-word or an auxiliary verb."""
    words = _WORD.findall(sentence.lower())
    return sentence.rstrip().endswith("?") or (
        bool(words) and (words[0] in WH_WORDS or words[0] in AUXILIARIES)
    )


def extractive_answer(question: str, history: Iterable[Mapping[str, Any]]) -> str | None:
    """The history sentence sharing the most content words with ``question``, verbatim.

    Ties go to the latest sentence, the likeliest to be what the question refers to.

    Args:
        question: The question's text.
        history: Messages with a ``"text"`` (any role), oldest first.

    Returns:
        The sentence, or None when no sentence shares a content word with the question.
    """
    wanted = content_words(question)
    best, best_overlap = None, 0
    for message in history:
        for sentence in sentences(str(message.get("text", ""))):
            overlap = len(wanted & content_words(sentence))
            if overlap and overlap >= best_overlap:
                best, best_overlap = sentence, overlap
    return best


def reply_to(said: str, history: Iterable[Mapping[str, Any]], fallback: str) -> str:
    """The reply to a turn: a quote if its last sentence is a question, else ``fallback``."""
    last = sentences(said)[-1:] or [""]
    if not is_question(last[0]):
        return fallback
    return extractive_answer(last[0], history) or fallback


class SilenceEndpointer:
    """Silero's speech/silence hysteresis over window probabilities, as a turn endpointer.

    Speech starts at a window at or above the threshold. Silence starts at a window below
    ``threshold - HYSTERESIS`` and lasts until a window reaches the threshold again; windows in
    between neither start nor break it (as in Silero's ``get_speech_timestamps``). The turn ends
    when silence has lasted the silence window after at least the minimum speech; shorter speech
    is forgotten once its silence has lasted as long.
    """

    def __init__(self, threshold: float, silence_ms: float, min_speech_ms: float) -> None:
        self.threshold = threshold
        self.neg_threshold = max(threshold - HYSTERESIS, 0.01)  # Silero's floor
        # Whole windows: 300 ms takes 10 (320 ms), 500 ms takes 16 (512 ms), 250 ms takes 8.
        self.silence_windows = math.ceil(silence_ms * VAD_RATE / 1000 / WINDOW)
        self.min_speech_windows = math.ceil(min_speech_ms * VAD_RATE / 1000 / WINDOW)
        self.reset()

    def reset(self) -> None:
        """Wait for new speech."""
        self._index = 0
        self._speech_start: int | None = None
        self._silence_start: int | None = None

    def feed(self, probability: float) -> bool:
        """Take the next window's probability; True when it ends the turn."""
        index = self._index
        self._index += 1
        if probability >= self.threshold:
            if self._speech_start is None:
                self._speech_start = index
            self._silence_start = None
            return False
        if self._speech_start is None:
            return False
        if self._silence_start is None:
            if probability >= self.neg_threshold:
                return False
            self._silence_start = index
        if index + 1 - self._silence_start < self.silence_windows:
            return False
        ended = self._silence_start - self._speech_start >= self.min_speech_windows
        self.reset()
        self._index = index + 1
        return ended


@dataclass(frozen=True)
class EndpointerParams:
    """An endpointer cascade card's ``[params]``."""

    reply_latency_ms: float = REPLY_LATENCY_MS
    """From the endpoint to the reply's first sample."""
    interrupt_ms: float | Literal[False] = INTERRUPT_MS
    """Speech heard over its reply for this long stops it; false: it never stops."""
    reply_text: str = REPLY_TEXT
    """What it says where its extractive answer finds nothing to say."""


@register_adapter("endpointer-cascade")
class EndpointerCascade(LocalAdapter):
    """Silero VAD endpointing, faster-whisper tiny.en, an extractive reply spoken by Piper.

    Card settings: ``turn_detection.silence_ms``, ``turn_detection.threshold`` and
    ``turn_detection.min_speech_ms`` for the endpointer; ``params.reply_latency_ms`` (from the
    endpoint to the reply's first sample) and ``params.reply_text`` (the fallback reply);
    ``params.interrupt_ms``, how long speech heard while its reply plays must last before the
    reply stops (a barge-in), or ``false`` for a system that never stops.

    The endpoint is the instant of the frame whose audio completes the silence window. On a
    virtual clock recognition and synthesis take no time; on a real clock they run in a worker
    thread, and if they outlast the latency the reply starts as soon as they are done.
    """

    VERSION = "1"
    PARAMS: ClassVar[type[Any]] = EndpointerParams
    params: EndpointerParams

    def __init__(self, card: SystemCard, clock: Clock) -> None:
        super().__init__(card, clock)
        turns = card.turn_detection
        silence_ms = number(card, turns, "silence_ms", SILENCE_MS)
        threshold = number(card, turns, "threshold", THRESHOLD)
        min_speech_ms = number(card, turns, "min_speech_ms", MIN_SPEECH_MS)
        latency_ms = float(self.params.reply_latency_ms)
        if silence_ms <= 0 or min_speech_ms < 0 or latency_ms < 0 or not 0 < threshold <= 1:
            raise PmcError(
                f"system card {card.name}: need silence_ms > 0, min_speech_ms >= 0, "
                "reply_latency_ms >= 0 and 0 < threshold <= 1"
            )
        interrupt = self.params.interrupt_ms
        self.interrupt_windows: int | None = None
        if interrupt is not False:
            interrupt_ms = float(interrupt)
            if interrupt_ms < 0:
                raise PmcError(f"system card {card.name}: need interrupt_ms >= 0 (or false)")
            self.interrupt_windows = max(1, math.ceil(interrupt_ms * VAD_RATE / 1000 / WINDOW))
        self._heard_windows = 0
        self._reply_task: asyncio.Task[None] | None = None
        self._speaking_from_ns: int | None = None
        self.reply_text = self.params.reply_text
        self.reply_latency_ns = round(latency_ms * NS_PER_S / 1000)
        self.endpointer = SilenceEndpointer(threshold, silence_ms, min_speech_ms)
        self._vad = StreamingVad()
        # HQ like pmc.audio.resample, so the stream is resampled exactly as a whole file would be.
        self._resampler = soxr.ResampleStream(
            card.sample_rate, VAD_RATE, 1, dtype="float32", quality="HQ"
        )
        self._utterance: list[FloatArray] = []
        self._replying = False

    @classmethod
    def latency_mark(cls, detail: Mapping[str, Any]) -> LatencyMark | None:
        """Its silence window closing on the turn (the ``endpointed`` signal)."""
        return LatencyMark.ENDPOINTED if detail.get("type") == ENDPOINTED else None

    @classmethod
    def prepare(cls, card: SystemCard) -> None:
        """Load the VAD, the recogniser and the voice once per process."""
        load_model()
        warm_asr()
        voiced(adapter_params(card).reply_text)

    async def connect(self) -> None:
        """Load the models and voice the fallback reply before the stream starts.

        On a real clock the first reply would otherwise be late by the loading (about 2 s).
        """
        await self.clock.run_blocking(warm_asr)
        await self.clock.run_blocking(lambda: voiced(self.reply_text))

    async def on_frame(self, samples: FloatArray) -> None:
        """Score the frame; at an endpoint, start the reply without holding up the stream."""
        frame = np.asarray(samples, dtype=np.float32).ravel()
        probabilities = self._vad.push(self._resampler.resample_chunk(frame))
        if self._replying:
            self._barge_in(probabilities)
            return
        self._utterance.append(frame)
        for probability in probabilities:
            if self.endpointer.feed(float(probability)):
                self.emit(EventKind.SIGNAL, detail={"type": ENDPOINTED})
                utterance = np.concatenate(self._utterance)
                self._utterance = []
                self._replying = True
                start_ns = self.clock.now_ns() + self.reply_latency_ns
                self._speaking_from_ns = start_ns
                self._reply_task = asyncio.get_running_loop().create_task(
                    self._reply(start_ns, utterance)
                )
                self._tasks.append(self._reply_task)
                return

    def _barge_in(self, probabilities: Iterable[float]) -> None:
        """While the reply plays: speech heard for the interrupt time stops it."""
        start = self._speaking_from_ns
        if self.interrupt_windows is None or start is None or self.clock.now_ns() < start:
            return
        for probability in probabilities:
            # Silero's hysteresis, as the endpointer's: speech starts at the threshold and goes
            # on until a window falls below threshold - HYSTERESIS.
            if self._heard_windows or probability >= self.endpointer.threshold:
                going = probability >= self.endpointer.neg_threshold
                self._heard_windows = self._heard_windows + 1 if going else 0
            if self._heard_windows >= self.interrupt_windows and self._reply_task is not None:
                self._reply_task.cancel()
                self.emit(EventKind.INTERRUPTED, detail={"barge_in": True})
                self._listen_again()
                return

    def _listen_again(self) -> None:
        self._utterance = []
        self.endpointer.reset()
        self._replying = False
        self._heard_windows = 0
        self._speaking_from_ns = None
        self._reply_task = None

    async def _reply(self, start_ns: int, utterance: FloatArray) -> None:
        """Answer; then listen again once the reply has finished playing."""
        await self.answer(start_ns, utterance)
        self._listen_again()

    async def answer(self, start_ns: int, utterance: FloatArray) -> None:
        """Transcribe the turn, choose the reply, speak it from ``start_ns``."""
        await speak_reply(self, start_ns, utterance, self.reply_text)


async def speak_reply(
    adapter: LocalAdapter, start_ns: int, utterance: FloatArray, fallback: str
) -> None:
    """The cascade's reply half: transcribe ``utterance``, choose the reply, speak it.

    The reply's first sample goes out at ``start_ns``, or as soon as it is ready if computing
    it took longer (a ``reply_late_ms`` signal says so). Returns once the reply has played.
    """
    said = await adapter.clock.run_blocking(lambda: transcript(utterance))
    history = adapter.preloaded.messages if adapter.preloaded is not None else []
    await say_at(adapter, start_ns, reply_to(said, history, fallback))


async def say_at(adapter: LocalAdapter, start_ns: int, text: str) -> None:
    """Voice ``text`` and play it from ``start_ns`` (late, and saying so, if voicing took longer).

    Returns once it has played.
    """
    clock, rate = adapter.clock, adapter.card.sample_rate
    voice = await clock.run_blocking(lambda: voiced(text))
    audio = resample(voice, SAMPLE_RATE, rate)
    overrun_ns = clock.now_ns() - start_ns
    if overrun_ns > 0:
        # Computation took longer than the set latency: the reply goes out late, and says so.
        adapter.emit(EventKind.SIGNAL, detail={"reply_late_ms": overrun_ns / 1e6})
    await adapter.speak_at(start_ns, audio, text, CHUNK_S)
    await clock.sleep_until(start_ns + len(audio) * NS_PER_S // rate)


def number(card: SystemCard, table: Mapping[str, Any], key: str, default: float) -> float:
    """A numeric card setting, or ``default``; anything else names the card and the key."""
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PmcError(f"system card {card.name}: {key} must be a number, not {value!r}")
    return float(value)
