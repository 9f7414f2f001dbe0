"""A fake xAI Grok Voice server: OpenAI's event names, xAI's session shape, a late commit.

docs/wire-formats.md section 6.3. xAI's session has ``turn_detection`` at session level, no
``type``, and turns detection off only with ``{"type": null}``. xAI acknowledges a commit late
(``committed`` after ``commit_delay_ms``), and a response asked for before that comes back as
text only: the failure the paper's corrected protocol avoids.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pmc.testing.hosted._openai import OpenAIFakeSession


class XaiFakeSession(OpenAIFakeSession):
    """A fake Grok Voice session: xAI's session shape, a late ``committed``."""

    DIALECT = "xai"
    PATH = "/v1/realtime?model=grok-voice-latest"
    SESSION_KEYS = frozenset({"voice", "instructions", "turn_detection", "audio", "tools"})

    async def opened(self) -> None:
        """``conversation.created`` first (xAI's first event)."""
        conversation = {"id": self.record.session_id, "object": "realtime.conversation"}
        await self.send(
            {
                "type": "conversation.created",
                "event_id": self.event_id(),
                "conversation": conversation,
            }
        )

    def check_session(self, session: dict[str, Any]) -> str | None:
        """What is wrong with an xAI session, if anything."""
        extra = sorted(set(session) - self.SESSION_KEYS)
        if extra:
            return f"unknown session field(s) for xAI: {', '.join(extra)}"
        detection = session.get("turn_detection", {"type": "server_vad"})
        if not isinstance(detection, dict):
            return 'turn_detection must be an object; switch it off with {"type": null}'
        if detection.get("type") not in ("server_vad", None):
            return f"unsupported turn_detection type {detection.get('type')!r}"
        audio = session.get("audio", {})
        for side in ("input", "output"):
            fmt = audio.get(side, {}).get("format") if isinstance(audio, dict) else None
            if fmt is not None and fmt.get("type") != "audio/pcm":
                return f"session.audio.{side}.format must be audio/pcm"
        return None

    def turn_detection_of(self, session: dict[str, Any]) -> dict[str, Any] | None:
        """XAI keeps turn detection at session level."""
        detection: dict[str, Any] | None = session.get("turn_detection", {"type": "server_vad"})
        return detection

    async def acknowledge_commit(self) -> None:
        """``committed`` only after the commit has been processed, later."""
        delay = self.behaviour.commit_delay_ms / 1000
        self.committed = False

        async def later() -> None:
            await asyncio.sleep(delay)
            await OpenAIFakeSession.acknowledge_commit(self)

        self.spawn(later())
