"""The labels bench (``pmc bench labels``): the rule engine's time on one long conversation.

A synthetic conversation (no gap-fill recognition), labelled once to warm up and then timed
``repeat`` times in this process.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from pmc.labels import label_conversation
from pmc.testing.conversations import synthetic_conversation

LABELS_TARGET_MS = 100.0
"""The Label engine issue's target for a 12-minute conversation on one core."""


@dataclass(frozen=True)
class LabelsBench:
    """One bench result: the conversation's size and each timed run."""

    minutes: float
    words: int
    labels: int
    times_ms: list[float]

    @property
    def median_ms(self) -> float:
        """The median timed run."""
        return statistics.median(self.times_ms)

    @property
    def met(self) -> bool:
        """Whether the median is within :data:`LABELS_TARGET_MS`."""
        return self.median_ms <= LABELS_TARGET_MS


def bench_labels(minutes: float, repeat: int) -> LabelsBench:
    """Label a ``minutes``-long synthetic conversation ``repeat`` times, each timed."""
    conversation = synthetic_conversation(minutes)
    label_conversation(conversation)  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        labels = label_conversation(conversation)
        times.append((time.perf_counter() - start) * 1000)
    words = sum(len(s.words) for s in conversation.speakers)
    return LabelsBench(minutes, words, len(labels.labels), times)
