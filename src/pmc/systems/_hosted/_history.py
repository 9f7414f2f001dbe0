"""The history a hosted system is given: as text (the paper's), or as the audio that was heard.

The paper gives hosted systems the history as text while full-duplex systems hear it, so part of
the recall gap between the families is a gap between channels (section 6). A card's
``params.history = "audio"`` gives each completed turn as audio instead, cut from the same
history the full-duplex systems hear (``Preload.user_audio`` and ``system_audio``): the other
speaker's turns as user audio, and the system's own turns as assistant audio with their
transcript where ``params.assistant_history = "audio"`` (the protocol accepts it), otherwise as
assistant text. docs/wire-formats.md section 6 shows each API's items.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from pmc.audio import SAMPLE_RATE, FloatArray, resample
from pmc.errors import PmcError
from pmc.systems._adapter import ADAPTERS, Preload, adapter_params
from pmc.systems._card import SystemCard
from pmc.systems._hosted._session import HostedParams


class HistoryMode(StrEnum):
    """How the completed turns of the history reach a hosted system."""

    TEXT = "text"
    AUDIO = "audio"


@dataclass(frozen=True)
class HistoryTurn:
    """One completed turn as a hosted system is given it.

    Attributes:
        assistant: Whether the system itself said it.
        text: What was said (the transcript).
        audio: The turn's audio at 24 kHz, or None where it goes as text.
    """

    assistant: bool
    text: str
    audio: FloatArray | None = None

    def at_rate(self, rate: int) -> FloatArray:
        """The audio at the wire's rate (the harness's own 24 kHz unless the API wants other)."""
        if self.audio is None:
            raise ValueError("a text turn has no audio")
        return resample(self.audio, SAMPLE_RATE, rate)


def history_mode(card: SystemCard) -> HistoryMode:
    """The card's history mode (text unless it says audio)."""
    return HistoryMode(adapter_params(card).history)


def history_channel(card: SystemCard) -> HistoryMode | None:
    """How a card's system is given the history where its adapter lets the card choose.

    None for an adapter with no such choice (a full-duplex model hears the history and a
    cascade reads it, whatever its card says), and for one not registered here.
    """
    factory = ADAPTERS.get(card.adapter)
    if factory is None or not issubclass(factory.PARAMS, HostedParams):
        return None
    return HistoryMode(adapter_params(card).history)


def assistant_mode(card: SystemCard) -> HistoryMode:
    """How the system's own turns go in audio mode: as audio unless the card says text."""
    return HistoryMode(adapter_params(card).assistant_history)


def history_turns(preload: Preload, card: SystemCard) -> list[HistoryTurn]:
    """The completed turns of the history, each with its audio where the card asks for it."""
    audio = history_mode(card) is HistoryMode.AUDIO
    own_audio = assistant_mode(card) is HistoryMode.AUDIO
    turns = []
    for message in preload.messages:
        assistant = message.get("role") == "assistant"
        text = str(message.get("text", ""))
        clip = None
        if audio and (own_audio or not assistant):
            side = preload.system_audio if assistant else preload.user_audio
            clip = cut(side, message, preload.history_start_conv_s)
        turns.append(HistoryTurn(assistant, text, clip))
    return turns


def cut(side: FloatArray, message: dict[str, object], origin_conv_s: float) -> FloatArray:
    """A message's stretch of one side of the history audio, by its conversation-clock times.

    Raises:
        PmcError: If the message has no times (history files from before they were written).
    """
    start, end = message.get("start_conv_s"), message.get("end_conv_s")
    if not isinstance(start, int | float) or not isinstance(end, int | float):
        raise PmcError("a history message without start_conv_s and end_conv_s has no audio")
    first = max(0, round((start - origin_conv_s) * SAMPLE_RATE))
    last = min(len(side), round((end - origin_conv_s) * SAMPLE_RATE))
    return side[first : max(first, last)]
