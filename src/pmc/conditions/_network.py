"""A network between the caller and the system: each input frame delayed, some lost.

docs/conditions.md "Network". Each frame's extra delay is drawn from a seeded uniform
distribution of ``0..2 * jitter_ms`` (mean ``jitter_ms``), and each frame is lost with
probability ``loss``, independently. A receiver plays frames in order at their own time: a frame
that arrives late is played late, and a lost one is replaced by silence or by the last frame
that arrived (:class:`~pmc.conditions.Concealment`). On the real clock the delay is waited; on
the virtual clock the frame is sent at its delayed time on that clock.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pmc.audio import FloatArray
from pmc.conditions._spec import Concealment


@dataclass(frozen=True)
class Delivery:
    """What the network does to one input frame.

    Attributes:
        index: The frame's index in the stream.
        delay_ns: How much later than its deadline it arrives.
        lost: Whether it never arrives (its concealment is sent in its place).
    """

    index: int
    delay_ns: int
    lost: bool


def deliveries(
    frames: int, jitter_ms: float, loss: float, seed: int, frame_ns: int
) -> tuple[Delivery, ...]:
    """The network's schedule for ``frames`` frames: same seed, same schedule.

    Delays never reorder frames (a receiver's jitter buffer plays them in order): a frame is
    never delivered before the one ahead of it. Delays and losses are drawn from two streams
    of the seed, so the schedule of the first frames is the same however many are asked for.
    """
    delays, losses = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    extra = delays.uniform(0.0, 2.0 * jitter_ms * 1e6, frames).astype(np.int64)
    lost = losses.random(frames) < loss
    out = []
    latest = 0
    for i in range(frames):
        at = max(i * frame_ns + int(extra[i]), latest)
        latest = at
        out.append(Delivery(i, at - i * frame_ns, bool(lost[i])))
    return tuple(out)


def conceal(frame: FloatArray, last: FloatArray | None, concealment: Concealment) -> FloatArray:
    """What is played in place of a lost ``frame``."""
    if concealment is Concealment.REPEAT and last is not None and len(last) == len(frame):
        return last.copy()
    return np.zeros(len(frame), dtype=np.float32)


@dataclass(frozen=True)
class Network:
    """One rollout's network: its setting and the seed of its draws.

    Attributes:
        jitter_ms: Mean extra delay of a frame (drawn from 0 to twice this).
        loss: Probability that a frame is lost.
        concealment: What is played in place of a lost frame.
        seed: Seeds the draws (the same seed, the same delays and losses).
    """

    jitter_ms: float
    loss: float
    concealment: Concealment
    seed: int

    def schedule(self, frames: int, frame_ns: int) -> tuple[Delivery, ...]:
        """What happens to each of the first ``frames`` frames of ``frame_ns`` each."""
        return deliveries(frames, self.jitter_ms, self.loss, self.seed, frame_ns)
