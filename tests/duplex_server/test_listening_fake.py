"""The listening fake counts every frame a client sent, even one that closed before its answers.

Its records pair each session with a rollout's trace by the frames both saw; a fake held off the
processor falls behind the client, and a client that closes after its last frame must not cut
the fake's count short (CI once had a session count 194 of the 197 frames sent).
"""

from __future__ import annotations

import asyncio

import numpy as np
from websockets.asyncio.client import connect

from pmc.duplex_server import FRAME_SAMPLES, SAMPLE_RATE, Kind
from pmc.testing.duplex_server import ListeningMoshi

FRAMES = 12
"""Sent at once: the fake answers one every 80 ms, so it is about a second behind at the end.
They decode to exactly this many frames (the codec keeps nothing back at 24 kHz)."""


async def _send_and_close(url: str) -> None:
    """Send :data:`FRAMES` frames of quiet and close at once, reading no answer."""
    import sphn

    writer = sphn.OpusStreamWriter(SAMPLE_RATE)
    quiet = np.zeros(FRAME_SAMPLES, np.float32)
    async with connect(url, compression=None) as ws:
        assert await ws.recv() == bytes([Kind.HANDSHAKE])
        for _ in range(FRAMES):
            await ws.send(bytes([Kind.AUDIO]) + bytes(writer.append_pcm(quiet)))


async def _serve_one() -> ListeningMoshi:
    """One session; the server's exit waits for its handler to end."""
    fake = ListeningMoshi()
    async with fake.running() as url:
        await _send_and_close(url)
    return fake


def test_a_client_that_closes_early_has_every_frame_counted() -> None:
    (session,) = asyncio.run(_serve_one()).sessions
    # Whether the fake fell behind or kept up, it heard every frame (the fake that stopped
    # reading when its send failed counted 1 of the 12 here).
    assert session.frames == FRAMES
