"""Scripted voice-activity projections, standing in for the VAP model in tests."""

from __future__ import annotations

import numpy as np

from pmc.corpus import Channel, Conversation
from pmc.labels import Projection, Projector

FRAME_HZ = 50.0
"""VAP's own frame rate (docs/wire-formats.md section 4)."""


class ScriptedProjector(Projector):
    """Projects P(A holds the floor) = ``p_a`` everywhere except in the given windows.

    Args:
        p_a: The default probability for speaker A; B gets ``1 - p_a`` (VAP normalises across
            the two speakers).
        windows: ``(start_s, end_s, p_a)`` stretches that override the default.
    """

    name = "scripted"

    def __init__(
        self, p_a: float = 0.5, windows: tuple[tuple[float, float, float], ...] = ()
    ) -> None:
        self.p_a = p_a
        self.windows = windows

    def project(self, conversation: Conversation) -> Projection:
        """The scripted probabilities over the conversation's length."""
        frames = int(conversation.duration_s * FRAME_HZ) + 1
        p_a = np.full(frames, self.p_a)
        for start, end, value in self.windows:
            p_a[int(start * FRAME_HZ) : int(end * FRAME_HZ) + 1] = value
        return Projection(FRAME_HZ, {Channel.A: p_a, Channel.B: 1.0 - p_a})


class HoldingProjector(ScriptedProjector):
    """Always projects that speaker A keeps the floor (P = 0.9): a plug-in for CLI tests."""

    def __init__(self) -> None:
        super().__init__(p_a=0.9)
