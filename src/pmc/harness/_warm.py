"""Loading what rollouts need before any real-time stream starts (here, or in a Ray worker)."""

from __future__ import annotations

import io
from collections.abc import Iterable

import numpy as np
import soundfile as sf

from pmc.audio import SAMPLE_RATE
from pmc.harness._audit import audit
from pmc.harness._playback import Chunk, reconstruct
from pmc.harness._streamer import FrameTiming
from pmc.systems import SystemCard, adapter_factory


def warm_up(cards: Iterable[SystemCard]) -> None:
    """Load models and lazily imported code before any real-time stream starts.

    A model loading, or a library importing itself, in the middle of a run holds the
    interpreter for up to a second and makes every concurrent stream late.
    """
    for card in cards:
        adapter_factory(card).prepare(card)
    timing = [FrameTiming(0, 0, 1)]
    audit(timing)
    played = reconstruct([Chunk(0, np.zeros(480, dtype=np.float32))], 0, [], 0.1)
    buffer = io.BytesIO()
    sf.write(buffer, played.track, SAMPLE_RATE, format="FLAC", subtype="PCM_16")
