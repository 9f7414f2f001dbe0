"""Text to speech behind one small interface and a registry: spoken questions, demo voices.

The offline default is Piper with its bundled voice; a voice-cloning backend plugs into the same
interface (``@register_tts``) and receives the asking speaker's voice hint.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

from pmc.audio import FloatArray
from pmc.errors import PmcError
from pmc.registry import Registry
from pmc.tts._piper import PITCH_B, Utterance, synthesize

DEFAULT_TTS = "piper"


@dataclass(frozen=True)
class VoiceHint:
    """Whose voice to speak in: a pitch factor for Piper, reference audio for a cloning backend.

    Attributes:
        pitch: Piper's pitch factor (1.0 the bundled voice; the demo's speaker B uses 1.4).
        reference_wav: Path to 20 to 40 s of the speaker (paper section 3.3), for cloning.
    """

    pitch: float = 1.0
    reference_wav: str | None = None


class TextToSpeech(ABC):
    """Speaks text as mono float32 audio at :data:`pmc.audio.SAMPLE_RATE`."""

    spec: str

    @abstractmethod
    def speak(self, text: str, voice: VoiceHint) -> FloatArray:
        """The spoken ``text``."""


TTS_BACKENDS: Registry[Callable[[], TextToSpeech]] = Registry("text-to-speech backend")
"""Text-to-speech backends by the name settings use."""
register_tts = TTS_BACKENDS.register
"""Decorator: make a backend factory available under a name (``@register_tts("piper")``)."""


@register_tts("piper")
class PiperTts(TextToSpeech):
    """Piper's bundled voice; the voice hint's pitch shifts it (reference audio is ignored)."""

    spec = "piper"

    def speak(self, text: str, voice: VoiceHint) -> FloatArray:
        """Synthesise ``text`` deterministically."""
        return synthesize(tuple(text.split()), pitch=voice.pitch).audio


def create_tts(spec: str = DEFAULT_TTS) -> TextToSpeech:
    """Build the backend a setting names."""
    factory = TTS_BACKENDS.get(spec)
    if factory is None:
        raise PmcError(f"unknown text-to-speech backend {spec!r} (known: {TTS_BACKENDS.known()})")
    return factory()


__all__ = [
    "DEFAULT_TTS",
    "PITCH_B",
    "TTS_BACKENDS",
    "PiperTts",
    "TextToSpeech",
    "Utterance",
    "VoiceHint",
    "create_tts",
    "register_tts",
    "synthesize",
]
