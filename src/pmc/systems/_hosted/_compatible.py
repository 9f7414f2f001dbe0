"""A server that speaks the OpenAI Realtime dialect at an endpoint of its own.

vLLM-Omni's turn-based handler (Qwen3-Omni), Hugging Face's speech-to-speech, LocalAI, Azure and
others accept OpenAI's GA events but not all of its session (docs/wire-formats.md section 6,
"OpenAI-compatible servers"). The card says what differs, in ``[params]``: the model name, the
rates, which parts of ``session.update`` the server takes, whether a commit carries ``final``
(vLLM-Omni) and whether ``response.create`` must follow it; the key is optional. Which
endpointer the server offers is the card's ``[turn_detection]``: a table (``server_vad`` or
``semantic_vad``) where the server has one, none where it has not. A server without one is never
asked to decide at a pause: it answers only when pmc commits at a turn end, so its pause points
measure nothing about turn-taking (the report's hold rate is then 1 by construction).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pmc.audio import FloatArray, resample
from pmc.clock import Clock
from pmc.systems._adapter import Preload, adapter_params, register_adapter
from pmc.systems._card import SystemCard
from pmc.systems._hosted._openai import OpenAIRealtime, RealtimeParams
from pmc.systems._hosted._session import api_key

SessionField = Literal["instructions", "output_modalities", "voice", "formats", "turn_detection"]
"""The optional parts of ``session.update`` a server may or may not take."""
ALL_FIELDS: tuple[SessionField, ...] = (
    "instructions",
    "output_modalities",
    "voice",
    "formats",
    "turn_detection",
)


@dataclass(frozen=True)
class CompatibleParams(RealtimeParams):
    """An OpenAI-compatible card's ``[params]``."""

    model: str = ""
    """Sent as ``session.model`` (empty: the endpoint's URL names it, as OpenAI's does)."""
    input_rate: int = 24_000
    """The rate the server takes live audio at."""
    output_rate: int = 24_000
    """The rate of the server's audio (resampled to the card's rate as it arrives)."""
    session_fields: list[SessionField] = field(default_factory=lambda: list(ALL_FIELDS))
    """The parts of ``session.update`` the server accepts; the rest are left out."""
    commit_final: bool = False
    """``input_audio_buffer.commit`` carries ``"final": true`` (vLLM-Omni's turn-based handler
    answers only a final commit)."""
    response_create: bool = True
    """``response.create`` follows the commit (false: the server answers a commit by itself)."""


@register_adapter("openai-compatible")
class OpenAICompatible(OpenAIRealtime):
    """OpenAI's GA events at any endpoint, with the differences the card gives.

    Card settings: ``endpoint`` (``ws://`` or ``wss://``), ``api_key_env`` (optional: sent as a
    bearer token when set), ``[turn_detection]`` (the server's endpointer, if it has one),
    ``[params]`` (:class:`CompatibleParams`).
    """

    VERSION = "1"
    SENDS_TEXT = False  # transcript deltas are kept where a server sends them; many send none
    PARAMS = CompatibleParams
    params: CompatibleParams

    def __init__(self, card: SystemCard, clock: Clock) -> None:
        super().__init__(card, clock)
        self.fields = set(self.params.session_fields)

    @classmethod
    def wire_input_rate(cls, card: SystemCard) -> int:
        """The card's ``params.input_rate``."""
        return int(adapter_params(card).input_rate)

    @classmethod
    def prepare(cls, card: SystemCard) -> None:
        """Check the card; a key only where the card names its variable."""
        cls.check_card(card)
        if card.api_key_env:
            api_key(card)

    def auth_headers(self, key: str) -> dict[str, str]:
        """A bearer token, when the card has a key."""
        return {"Authorization": f"Bearer {key}"} if key else {}

    def session_key(self) -> str:
        """The key from the card's variable, or none where the card names no variable."""
        return super().session_key() if self.card.api_key_env else ""

    def turn_detection(self) -> dict[str, Any] | None:
        """The card's turn detection where it has one and it decides; otherwise none."""
        if not self.card.turn_detection:
            return None
        return super().turn_detection()

    def session_messages(self, preload: Preload) -> list[dict[str, Any]]:
        """One GA ``session.update`` with the parts the server takes."""
        session: dict[str, Any] = {"type": "realtime"}
        if self.params.model:
            session["model"] = self.params.model
        if "instructions" in self.fields:
            session["instructions"] = preload.identity_prompt
        if "output_modalities" in self.fields:
            session["output_modalities"] = ["audio"]
        audio_in: dict[str, Any] = {}
        audio_out: dict[str, Any] = {}
        if "formats" in self.fields:
            audio_in["format"] = {"type": "audio/pcm", "rate": self.input_rate}
            audio_out["format"] = {"type": "audio/pcm", "rate": self.params.output_rate}
        if "turn_detection" in self.fields:
            audio_in["turn_detection"] = self.turn_detection()
        if "voice" in self.fields:
            audio_out["voice"] = self.voice
        audio = {k: v for k, v in (("input", audio_in), ("output", audio_out)) if v}
        if audio:
            session["audio"] = audio
        return [{"type": "session.update", "session": session}]

    async def listen(self) -> None:
        """At a talk-over point, the server's endpointer back on, where it has one to send."""
        if self.card.turn_detection and "turn_detection" in self.fields:
            await super().listen()

    async def end_of_input(self) -> None:
        """Commit (``final`` where the card says), then ask for the answer where it must."""
        commit: dict[str, Any] = {"type": "input_audio_buffer.commit"}
        if self.params.commit_final:
            commit["final"] = True
        await self.send_json(commit)
        if self.params.response_create:
            await self.send_json({"type": "response.create"})

    def delta_samples(self, delta: str) -> FloatArray:
        """A delta's samples, from the server's rate to the card's."""
        samples = self.decoder.decode(delta)
        return resample(samples, self.params.output_rate, self.OUTPUT_RATE)
