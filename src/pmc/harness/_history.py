"""The context ablation: which history every system gets (docs/architecture.md "Context ablation").

The paper's claim is that a system decides at a boundary from the conversation so far. A run's
history mode changes only that: ``none`` gives the live turn alone, ``shuffled`` a history of
the same length from another conversation; the live turn, the point and the scoring stay as
they are, so a run and its ablated twin pair point by point.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from enum import StrEnum
from pathlib import Path

import numpy as np

from pmc.audio import SAMPLE_RATE
from pmc.errors import PmcError
from pmc.harness._inputs import preload_for
from pmc.points import Point
from pmc.systems import HistoryWord, Preload


class HistorySource(StrEnum):
    """What a run gives every system before the live turn."""

    FULL = "full"
    """The point's own history (the paper's protocol)."""
    NONE = "none"
    """Nothing: the live turn alone, as a system that remembers nothing would hear it."""
    SHUFFLED = "shuffled"
    """As long a history from another conversation of the corpus, chosen from the run's seed."""


def history_s(point: Point) -> float:
    """The length of a point's history on the conversation clock."""
    return max(0.0, point.stream_start_conv_s - point.history_start_conv_s)


def history_donor(point: Point, points: Sequence[Point], seed: int) -> Point:
    """The point whose history stands in for ``point``'s in a shuffled run.

    One of another conversation's points whose history is at least as long (the longest of them
    where none is), chosen from the run's seed and the point's id: every system of a run gets
    the same stand-in at a point, so the ablated run's systems pair with each other too.
    """
    others = sorted(
        (p for p in points if p.conversation_id != point.conversation_id),
        key=lambda p: p.point_id,
    )
    if not others:
        raise PmcError(
            f"point {point.point_id}: a shuffled history needs points from another conversation, "
            f"and every point is from {point.conversation_id}"
        )
    long_enough = [p for p in others if history_s(p) >= history_s(point)]
    if not long_enough:
        return max(others, key=history_s)
    key = f"{seed}|history|{point.point_id}".encode()
    index = int.from_bytes(hashlib.sha256(key).digest()[:8], "big") % len(long_enough)
    return long_enough[index]


def with_history(
    preload: Preload,
    mode: HistorySource,
    point: Point,
    points: Sequence[Point],
    points_dir: Path,
    seed: int,
) -> Preload:
    """``preload`` with the history ``mode`` gives (unchanged for ``full``).

    The identity prompt, the endpointing and the seed stay the point's own.
    """
    if mode is HistorySource.FULL:
        return preload
    empty = np.zeros(0, dtype=np.float32)
    if mode is HistorySource.NONE:
        return replace(
            preload,
            user_audio=empty,
            system_audio=empty,
            messages=[],
            system_words=(),
            history_start_conv_s=point.stream_start_conv_s,
        )
    return _shuffled(preload, point, history_donor(point, points, seed), points_dir)


def _shuffled(preload: Preload, point: Point, donor: Point, points_dir: Path) -> Preload:
    """The donor's history cut to the length of the point's own, its words and turns with it.

    A donor with a shorter history (only where no conversation has one as long) is padded with
    silence at its start.
    """
    theirs = preload_for(points_dir, donor, preload.seed)
    want = len(preload.user_audio)
    start_conv_s = donor.stream_start_conv_s - want / SAMPLE_RATE
    origin_shift = start_conv_s - donor.history_start_conv_s
    messages = [  # a turn without times cannot be placed: it is kept
        m
        for m in theirs.messages
        if "start_conv_s" not in m or float(m["start_conv_s"]) >= start_conv_s - 1e-6
    ]
    words = tuple(
        HistoryWord(w.text, w.start_s - origin_shift, w.end_s - origin_shift)
        for w in theirs.system_words
        if w.start_s >= origin_shift
    )
    return replace(
        preload,
        user_audio=_tail(theirs.user_audio, want),
        system_audio=_tail(theirs.system_audio, len(preload.system_audio)),
        messages=messages,
        system_words=words,
        history_start_conv_s=start_conv_s,
    )


def _tail(samples: np.ndarray, n: int) -> np.ndarray:
    """The last ``n`` samples, padded with silence in front when there are fewer."""
    if len(samples) >= n:
        return samples[len(samples) - n :]
    return np.concatenate([np.zeros(n - len(samples), dtype=samples.dtype), samples])
