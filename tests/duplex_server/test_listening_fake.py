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
"""Sent at once: the fake answers one every 80 ms, so it is about a second behind at the end."""


async def _session(url: str, read_answers: bool) -> int:
    """Send :data:`FRAMES` frames of quiet; read every answer, or close at once. Answers read."""
    import sphn

    writer = sphn.OpusStreamWriter(SAMPLE_RATE)
    answers = 0
    async with connect(url, compression=None) as ws:
        assert await ws.recv() == bytes([Kind.HANDSHAKE])
        quiet = np.zeros(FRAME_SAMPLES, np.float32)
        pages = [bytes(writer.append_pcm(quiet)) for _ in range(FRAMES)]
        for page in filter(None, pages):
            await ws.send(bytes([Kind.AUDIO]) + page)
        while read_answers and answers < sum(map(bool, pages)) - 1:
            answers += (await ws.recv())[:1] == bytes([Kind.AUDIO])
    return answers


async def _both() -> tuple[ListeningMoshi, list[int]]:
    """Two sessions, one after the other; the server's exit waits for both handlers to end."""
    fake = ListeningMoshi()
    async with fake.running() as url:
        read = [await _session(url, read_answers=True), await _session(url, read_answers=False)]
    return fake, read


def test_a_client_that_closes_early_has_every_frame_counted() -> None:
    fake, read = asyncio.run(_both())
    waited, closed = fake.sessions
    assert read[1] == 0 and read[0] > 0
    assert closed.frames == waited.frames > 0, (closed.frames, waited.frames)
    assert len(closed.sent_ns) < len(waited.sent_ns), "the second client closed before its answers"
