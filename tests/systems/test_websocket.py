"""What a websocket adapter makes of a server's close, whichever of its tasks meets it first."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from websockets.asyncio.server import ServerConnection, serve

from pmc.clock import RealClock
from pmc.systems import (
    RetryReason,
    TransportError,
    WebsocketAdapter,
    bundled_cards,
    create_adapter,
    find_card,
)

CARD = "voicebench-agent"
"""Any card on a plain websocket: only the socket's handling is under test."""


@pytest.mark.parametrize(
    ("code", "retry"),
    [(1001, RetryReason.GOING_AWAY), (1013, RetryReason.OVERLOADED), (1011, None)],
)
def test_a_send_after_the_server_closed_fails_with_the_closes_retry_reason(
    code: int, retry: RetryReason | None
) -> None:
    """A frame sent after a "going away" close is retried, as when the reader sees it first.

    A fake that sends Gemini's ``goAway`` and then closes with 1001 raced the stream's next
    send against the reader: under load the send met the closed socket first, and the rollout
    failed instead of being retried.
    """

    async def close_at_once(ws: ServerConnection) -> None:
        await ws.close(code, "injected close")

    async def scenario() -> TransportError:
        async with serve(close_at_once, "127.0.0.1", 0) as server:
            port = server.sockets[0].getsockname()[1]
            card = find_card(CARD, bundled_cards())
            card = dataclasses.replace(card, endpoint=f"ws://127.0.0.1:{port}")
            adapter = create_adapter(card, RealClock())
            assert isinstance(adapter, WebsocketAdapter)
            ws = await adapter.open(adapter.endpoint())
            await ws.wait_closed()  # the close has arrived; no reader has seen it
            with pytest.raises(TransportError) as failed:
                await adapter.send(b"\x00\x00" * 160)
            return failed.value

    error = asyncio.run(scenario())
    assert error.retry is retry
    assert str(code) in str(error)
