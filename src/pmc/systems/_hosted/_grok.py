"""xAI Grok Voice: OpenAI's event names with xAI's session shape, and the corrected commit.

docs/wire-formats.md section 6: ``session.update`` carries ``voice``,
``instructions``, ``turn_detection`` at session level and the audio formats, without OpenAI's
``type`` and ``output_modalities``; the only accepted way to switch turn detection off is
``{"type": null}``. The server processes a commit asynchronously, so a response requested at
once can miss the end of the input: after committing, the client waits for
``input_audio_buffer.committed`` and then 0.5 s before ``response.create`` (paper appendix C;
the paper's own code lacked this, docs/decisions.md section 6). The wait is recorded in the trace.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, ClassVar

from pmc.clock import NS_PER_S, Clock
from pmc.systems._adapter import LATE_MS, EventKind, Preload, SystemEvent, register_adapter
from pmc.systems._card import SystemCard
from pmc.systems._hosted._openai import RESPONSE_REQUESTED, RealtimeEvents, RealtimeParams

COMMIT_SETTLE_S = 0.5
"""Wait after ``input_audio_buffer.committed`` before asking for a response (paper App. C)."""
COMMITTED_TIMEOUT_S = 5.0
"""How long to wait for ``committed`` before asking anyway (and saying so in the trace)."""
DEFAULT_VOICE = "eve"
"""The voice of the paper's Grok runs (docs/decisions.md section 1)."""


@dataclass(frozen=True)
class GrokParams(RealtimeParams):
    """A Grok Voice card's ``[params]``."""

    voice: str = DEFAULT_VOICE
    commit_settle_s: float = COMMIT_SETTLE_S
    """How long after a commit the client waits for xAI to acknowledge it."""


@register_adapter("grok-voice")
class GrokVoice(RealtimeEvents):
    """Grok Voice over xAI's realtime websocket.

    Card settings: ``endpoint`` (``wss://api.x.ai/v1/realtime?model=...``), ``api_key_env``,
    ``[turn_detection]`` (at pause points), ``params.voice``, ``params.commit_settle_s``.
    """

    VERSION = "1"
    PARAMS: ClassVar[type[Any]] = GrokParams
    params: GrokParams

    def __init__(self, card: SystemCard, clock: Clock) -> None:
        super().__init__(card, clock)
        self.settle_s = float(self.params.commit_settle_s)
        self._committed = asyncio.Event()
        self._committed_ns = 0

    def session_messages(self, preload: Preload) -> list[dict[str, Any]]:
        """One ``session.update`` in xAI's shape; turn detection off is ``{"type": null}``."""
        audio_format = {"type": "audio/pcm", "rate": self.input_rate}
        turns = self.turn_detection() or {"type": None}
        return [
            {
                "type": "session.update",
                "session": {
                    "voice": self.voice,
                    "instructions": preload.identity_prompt,
                    "turn_detection": turns,
                    "audio": {
                        "input": {"format": audio_format},
                        "output": {"format": {"type": "audio/pcm", "rate": self.OUTPUT_RATE}},
                    },
                },
            }
        ]

    def listen_message(self) -> dict[str, Any]:
        """XAI's ``session.update``: turn detection at session level."""
        return {"type": "session.update", "session": {"turn_detection": self.turn_detection()}}

    def translate(self, arrival_ns: int, message: dict[str, Any]) -> list[SystemEvent]:
        """As OpenAI's, noting when the commit is acknowledged."""
        events = super().translate(arrival_ns, message)
        if message.get("type") == "input_audio_buffer.committed" and not self._committed.is_set():
            self._committed_ns = arrival_ns
            self._committed.set()
        return events

    async def end_of_input(self) -> None:
        """Commit; the response is asked for once the commit has settled, beside the stream."""
        commit_ns = self.clock.now_ns()
        await self.send_json({"type": "input_audio_buffer.commit"})
        self.spawn(self._request_response(commit_ns))

    async def _request_response(self, commit_ns: int) -> None:
        """Wait for ``committed`` plus the settling time, ask for a response, record the wait."""
        try:
            async with asyncio.timeout(COMMITTED_TIMEOUT_S):
                await self._committed.wait()
            committed_ns: int | None = self._committed_ns
        except TimeoutError:
            committed_ns = None
        settle_ns = round(self.settle_s * NS_PER_S)
        if committed_ns is not None:
            await self.clock.sleep_until(committed_ns + settle_ns)
        await self.send_json({"type": "response.create"})
        sent_ns = self.clock.now_ns()
        # A loop held off the processor asks late, which adds to the latency measured.
        late_ns = 0 if committed_ns is None else max(0, sent_ns - committed_ns - settle_ns)
        self.emit(
            EventKind.SIGNAL,
            detail={
                "type": RESPONSE_REQUESTED,
                "committed": committed_ns is not None,
                "commit_to_committed_ms": (
                    None if committed_ns is None else round((committed_ns - commit_ns) / 1e6, 3)
                ),
                "settle_ms": self.settle_s * 1000,
                "commit_to_request_ms": round((sent_ns - commit_ns) / 1e6, 3),
                LATE_MS: round(late_ns / 1e6, 3),
            },
        )
