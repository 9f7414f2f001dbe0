"""Fake hosted real-time APIs on 127.0.0.1: OpenAI Realtime, its beta names, xAI, Gemini Live.

Each fake speaks its dialect's wire protocol faithfully enough to test an adapter against:
it checks every client message, runs a deterministic energy endpointer, answers in real words
after a set latency, splits audio at odd byte counts, handles barge-in, and can drift (send what
a client does not know), push back (429, rate limits, ``goAway``) and inject faults.
Everything it did is in the :class:`SessionRecord` of each session, on its stream clock.

>>> async with serve_fake(Dialect.OPENAI.session) as fake:  # doctest: +SKIP
...     card_endpoint = fake.url
"""

from __future__ import annotations

from enum import StrEnum

from pmc.testing.hosted._behaviour import AnswerRecord, FakeBehaviour, HistoryItem, SessionRecord
from pmc.testing.hosted._endpointer import EnergyEndpointer, VadEvent
from pmc.testing.hosted._gemini import GeminiFakeSession
from pmc.testing.hosted._openai import (
    SEMANTIC_TIMEOUT_MS,
    OpenAIBetaFakeSession,
    OpenAIFakeSession,
)
from pmc.testing.hosted._process import FakeProcess, fake_process
from pmc.testing.hosted._server import FakeServer, FakeServerThread, fake_in_thread, serve_fake
from pmc.testing.hosted._session import FakeSession
from pmc.testing.hosted._voice import answer_audio
from pmc.testing.hosted._xai import XaiFakeSession


class Dialect(StrEnum):
    """The fakes, by the API they imitate."""

    OPENAI = "openai"
    OPENAI_BETA = "openai-beta"
    XAI = "xai"
    GEMINI = "gemini"

    @property
    def session(self) -> type[FakeSession]:
        """The fake's session class."""
        return {
            Dialect.OPENAI: OpenAIFakeSession,
            Dialect.OPENAI_BETA: OpenAIBetaFakeSession,
            Dialect.XAI: XaiFakeSession,
            Dialect.GEMINI: GeminiFakeSession,
        }[self]

    @property
    def auth_header(self) -> str:
        """The header the API takes its key in."""
        return "x-goog-api-key" if self is Dialect.GEMINI else "Authorization"


__all__ = [
    "SEMANTIC_TIMEOUT_MS",
    "AnswerRecord",
    "Dialect",
    "EnergyEndpointer",
    "FakeBehaviour",
    "FakeProcess",
    "FakeServer",
    "FakeServerThread",
    "FakeSession",
    "GeminiFakeSession",
    "HistoryItem",
    "OpenAIBetaFakeSession",
    "OpenAIFakeSession",
    "SessionRecord",
    "VadEvent",
    "XaiFakeSession",
    "answer_audio",
    "fake_in_thread",
    "fake_process",
    "serve_fake",
]
