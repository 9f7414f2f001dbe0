"""The reference systems: never speak, always speak, the person and the shuffled person.

They define the ends of every scale (paper section 4.3; docs/architecture.md "Systems"): never-speak
holds every pause and never replies; always-speak talks from the first frame to the end; the person
replays the real reply at its real time (the ceiling); the shuffled person replays another point's
reply at that same time (the similarity floor).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from pmc.audio import FloatArray
from pmc.clock import Clock
from pmc.systems._adapter import Preload, ReferenceReply, ReferenceRow, register_adapter
from pmc.systems._card import SystemCard
from pmc.systems._local import LocalAdapter
from pmc.tts import VoiceHint, create_tts

CHUNK_S = 0.2
"""Output audio is sent in 200 ms chunks, each when it starts playing, like a streaming TTS."""

MONOLOGUE = (
    "Let me tell you about the garden behind our old house. Every spring my mother planted "
    "tomatoes, beans and far too many sunflowers, and every summer the birds ate half of them. "
    "We never minded, because the sunflowers grew taller than the fence and the whole street "
    "could see them."
)
"""What always-speak says, looped for as long as the rollout lasts."""


@functools.cache
def spoken(text: str) -> FloatArray:
    """``text`` in the bundled voice (cached: a reference reply is spoken once per process)."""
    return create_tts().speak(text, VoiceHint())


@functools.cache
def monologue() -> FloatArray:
    """What always-speak says: :data:`MONOLOGUE`, looped :attr:`AlwaysSpeak.LOOPS` times."""
    return np.tile(spoken(MONOLOGUE), AlwaysSpeak.LOOPS)


@register_adapter("never-speak")
class NeverSpeak(LocalAdapter):
    """Listens and says nothing."""

    REFERENCE = ReferenceRow.NEVER_SPEAK


@register_adapter("always-speak")
class AlwaysSpeak(LocalAdapter):
    """Talks from the first frame until the session closes."""

    REFERENCE = ReferenceRow.ALWAYS_SPEAK
    LOOPS = 8
    """About 2 minutes of speech: longer than any rollout (live stream plus the 30 s cap)."""

    def __init__(self, card: SystemCard, clock: Clock) -> None:
        super().__init__(card, clock)
        self._audio = np.zeros(0, dtype=np.float32)

    @classmethod
    def prepare(cls, card: SystemCard) -> None:
        """Voice the monologue once per process."""
        monologue()

    async def connect(self) -> None:
        """Voice the monologue before the stream starts (never inside the streaming loop)."""
        self._audio = await self.clock.run_blocking(monologue)

    def on_start(self) -> None:
        """Start the monologue at the stream clock's origin."""
        self.spawn(self.speak_at(self.stream_ns(0.0), self._audio, MONOLOGUE, CHUNK_S))


@register_adapter("person")
class Person(LocalAdapter):
    """Replays the reference reply it is given, starting at the reference's time.

    With no reference (a pause: the person held it) it stays silent.
    """

    TAKES_REFERENCE = True
    REFERENCE = ReferenceRow.PERSON

    @classmethod
    def reference_row(cls, card: SystemCard) -> ReferenceRow:
        """The person, or with ``params.reference = "shuffled"`` the shuffled person."""
        shuffled = card.reference == "shuffled"
        return ReferenceRow.SHUFFLED if shuffled else ReferenceRow.PERSON

    @classmethod
    def prepare(cls, card: SystemCard) -> None:
        """Load the voice that speaks answers with no recording (recall points)."""
        spoken("Yes.")

    def __init__(self, card: SystemCard, clock: Clock) -> None:
        super().__init__(card, clock)
        self.reference: ReferenceReply | None = None

    def give_reference(self, reference: ReferenceReply | None) -> None:
        """The reply to replay."""
        self.reference = reference

    async def preload(self, preload: Preload) -> None:
        """Voice a reference that has no recording, before the stream starts."""
        await super().preload(preload)
        ref = self.reference
        if ref is not None and ref.audio is None:
            audio = await self.clock.run_blocking(lambda: spoken(ref.text))
            self.reference = dataclasses.replace(ref, audio=audio)

    def on_start(self) -> None:
        """Schedule the reply on the stream clock."""
        ref = self.reference
        if ref is None or ref.audio is None:
            return
        at = self.stream_ns(ref.start_stream_s)
        self.spawn(self.speak_at(at, ref.audio, ref.text, CHUNK_S))
