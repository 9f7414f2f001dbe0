"""The one async interface every system adapter implements, and the adapter registry.

connect, preload the history, send live frames, signal the end of input, read a stream of
timestamped events, close (DESIGN "Systems"). Events carry the instant they reached the client,
taken on receipt, before any parsing.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from pmc.audio import FloatArray
from pmc.errors import PmcError
from pmc.systems._card import SystemCard


class EventKind(StrEnum):
    """What a system sent."""

    AUDIO = "audio"
    TEXT = "text"
    INTERRUPTED = "interrupted"
    """The system (or its endpointer) stopped its own speech: unplayed audio is dropped."""
    SIGNAL = "signal"
    """A protocol event worth keeping (speech started, committed, response done...)."""
    ERROR = "error"


@dataclass(frozen=True)
class SystemEvent:
    """One message from a system, stamped on arrival (harness clock, nanoseconds)."""

    kind: EventKind
    arrival_ns: int
    samples: FloatArray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))
    text: str = ""
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Preload:
    """What a system hears before the live stream (DESIGN "Protocol").

    Full-duplex systems take both speakers' audio; hosted systems take the completed turns as
    messages (the live turn then reaches them as audio like everyone else).
    """

    identity_prompt: str
    user_audio: FloatArray
    system_audio: FloatArray
    messages: list[dict[str, Any]]


class SystemAdapter(ABC):
    """A connection to one system for one rollout."""

    def __init__(self, card: SystemCard) -> None:
        self.card = card

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

    @abstractmethod
    def events(self) -> AsyncIterator[SystemEvent]:
        """Everything the system sends, in arrival order, until it is closed."""

    @abstractmethod
    async def close(self) -> None:
        """End the session."""


AdapterFactory = Callable[[SystemCard], SystemAdapter]
_ADAPTERS: dict[str, AdapterFactory] = {}


def register_adapter(name: str) -> Callable[[AdapterFactory], AdapterFactory]:
    """Register an adapter factory under the name cards use in ``adapter = "..."``."""

    def decorate(factory: AdapterFactory) -> AdapterFactory:
        _ADAPTERS[name] = factory
        return factory

    return decorate


def create_adapter(card: SystemCard) -> SystemAdapter:
    """The adapter a card names."""
    factory = _ADAPTERS.get(card.adapter)
    if factory is None:
        known = ", ".join(sorted(_ADAPTERS)) or "none registered yet"
        raise PmcError(f"system card {card.name}: unknown adapter {card.adapter!r} ({known})")
    return factory(card)
