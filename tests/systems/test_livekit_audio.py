"""LiveKit's console wire at 48 kHz: every frame is resampled on its own, nothing held back.

A streaming resampler releases its output in blocks, so a reply's first frame came out only
with a later one and its onset was stamped at that later frame's arrival (a fresh run put a
reply 116 ms after the agent's own record of writing it); the microphone's frames likewise
reached the agent in bursts, late. Here the adapter decodes and encodes frames as the wire
carries them, with no agent and no clock involved.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from pmc.clock import RealClock
from pmc.systems import EventKind, find_card
from pmc.systems._livekit import WIRE_RATE, LiveKitConsole, _protocol

FRAME_S = 0.02


def console() -> LiveKitConsole:
    adapter = LiveKitConsole(find_card("livekit-vad"), RealClock())
    adapter._pb = _protocol()
    return adapter


def test_each_agent_frame_is_heard_at_its_own_arrival() -> None:
    adapter = console()
    pb, rate = adapter._pb, adapter.card.sample_rate
    wire = round(FRAME_S * WIRE_RATE)
    tone = 0.3 * np.sin(2 * np.pi * 220 * np.arange(5 * wire) / WIRE_RATE)
    for i in range(5):
        pcm = (tone[i * wire : (i + 1) * wire] * 32767).astype("<i2")
        frame = pb.AgentSessionMessage.ConsoleIO.AudioFrame(
            data=pcm.tobytes(), sample_rate=WIRE_RATE, num_channels=1, samples_per_channel=wire
        )
        arrival_ns = 1_000_000_000 + i * 20_000_000
        (event,) = adapter._decode(arrival_ns, pb.AgentSessionMessage(audio_output=frame))
        assert event.kind is EventKind.AUDIO and event.arrival_ns == arrival_ns
        assert len(event.samples) == round(FRAME_S * rate), i  # all of it, at once
        assert np.sqrt(np.mean(event.samples**2)) == pytest.approx(0.3 / np.sqrt(2), rel=0.05)


def test_each_microphone_frame_reaches_the_agent_whole() -> None:
    adapter = console()
    sent: list[object] = []

    async def capture(message: object) -> None:
        sent.append(message)

    adapter._send = capture  # type: ignore[method-assign]
    rate = adapter.card.sample_rate
    for _ in range(5):
        asyncio.run(adapter.send_frame(np.full(round(FRAME_S * rate), 0.1, dtype=np.float32)))
    assert len(sent) == 5  # one wire frame per frame, none held back
    for message in sent:
        frame = message.audio_input  # type: ignore[attr-defined]
        assert frame.sample_rate == WIRE_RATE
        assert frame.samples_per_channel == round(FRAME_S * WIRE_RATE)
