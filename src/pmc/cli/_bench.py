"""``pmc bench``: speed measurements, reported rather than asserted in tests."""

from __future__ import annotations

import statistics
import time

import click

from pmc.cli._ui import out
from pmc.labels import label_conversation
from pmc.testing.conversations import synthetic_conversation

LABELS_TARGET_MS = 100.0
"""The Label engine issue's target for a 12-minute conversation on one core."""


@click.group()
def bench() -> None:
    """Measure how fast parts of the pipeline run."""


@bench.command("labels")
@click.option("--minutes", type=float, default=12.0, show_default=True, help="Conversation length.")
@click.option("--repeat", type=int, default=20, show_default=True, help="Timed runs.")
def bench_labels(minutes: float, repeat: int) -> None:
    """Time the rule engine on a synthetic conversation (no gap-fill ASR), one process, one core."""
    conversation = synthetic_conversation(minutes)
    label_conversation(conversation)  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        labels = label_conversation(conversation)
        times.append((time.perf_counter() - start) * 1000)
    words = sum(len(s.words) for s in conversation.speakers)
    median = statistics.median(times)
    out.print(
        f"rule engine on a {minutes:g}-minute conversation ({words} words, "
        f"{len(labels.labels)} labels): median {median:.1f} ms, best {min(times):.1f} ms "
        f"over {repeat} runs (target {LABELS_TARGET_MS:.0f} ms: "
        f"{'met' if median <= LABELS_TARGET_MS else 'missed'})",
        soft_wrap=True,
    )
