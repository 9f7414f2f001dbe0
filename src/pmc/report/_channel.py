"""The history channel: a hosted system given the history as text against the same as audio.

The paper's hosted systems read the history and its full-duplex systems hear it, so part of the
recall gap between the families is a gap between channels (section 6). When a run holds a
system with both history modes (:func:`pmc.systems.history_channel`, e.g. ``gpt-realtime-300`` and
``gpt-realtime-300-audio-history``), this table compares them on the points both were scored
on: recall of each kind (every history length) and turn-end similarity, with the paired
difference and a bootstrap over conversations, as the paired configuration comparison does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from pmc.points import PointKind
from pmc.report._aggregate import RESAMPLES, reply_field, strict_correct
from pmc.report._compare import paired_interval, with_interval
from pmc.report._data import RunData
from pmc.scoring import Score
from pmc.systems import HistoryMode, SystemCard, history_channel
from pmc.table import Cell, Table

HISTORY_PARAMS = ("history", "assistant_history")
"""The card parameters that choose the history's channel (the hosted adapters')."""


def channel_pairs(data: RunData) -> list[tuple[str, str]]:
    """(text, audio) systems of one adapter, otherwise configured alike, both under test."""
    under_test = [s for s in data.systems if data.references[s] is None]
    modes = {s: history_channel(data.cards[s]) for s in under_test}
    return [
        (text, audio)
        for text in under_test
        if modes[text] is HistoryMode.TEXT
        for audio in under_test
        if modes[audio] is HistoryMode.AUDIO and _twins(data.cards[text], data.cards[audio])
    ]


def _twins(a: SystemCard, b: SystemCard) -> bool:
    """Same adapter and the same settings but for the history's."""

    def rest(card: SystemCard) -> tuple[object, ...]:
        params = {**card.params, **card.protocol_params()}
        kept = {k: v for k, v in params.items() if k not in HISTORY_PARAMS}
        return (card.adapter, card.endpoint, card.turn_detection, kept)

    return rest(a) == rest(b)


def _strict(score: Score) -> float | None:
    return float(bool(strict_correct(score)))


ROWS: tuple[tuple[str, PointKind, Callable[[Score], float | None]], ...] = (
    ("conversation recall (strict)", PointKind.CONVERSATION_RECALL, _strict),
    ("fact recall (strict)", PointKind.FACT_RECALL, _strict),
    ("turn-end token F1", PointKind.TURN_END, reply_field("token_f1")),
    ("turn-end cosine", PointKind.TURN_END, reply_field("cosine")),
)
"""What is compared: recall over every history length, and the reply's similarity to the
person's (where both replied with words)."""


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if values else None


def channel_rows(
    data: RunData, text: str, audio: str, seed: int, resamples: int
) -> list[tuple[Cell, ...]]:
    """One row per compared value for a (text, audio) pair, on the points both have."""
    rows: list[tuple[Cell, ...]] = []
    for name, kind, pick in ROWS:
        a = {s.point_id: s for s in data.first(text, kind)}
        b = {s.point_id: s for s in data.first(audio, kind)}
        diffs: dict[str, list[float]] = {}
        values_a, values_b = [], []
        for pid in sorted(set(a) & set(b)):
            va, vb = pick(a[pid]), pick(b[pid])
            if va is None or vb is None:
                continue
            values_a.append(va)
            values_b.append(vb)
            diffs.setdefault(a[pid].conversation_id, []).append(vb - va)
        difference = _mean([v for vs in diffs.values() for v in vs])
        interval = paired_interval(diffs, seed, resamples)
        mean_a, mean_b = _mean(values_a), _mean(values_b)
        rows.append(
            (
                text,
                audio,
                name,
                len(values_a),
                None if mean_a is None else round(mean_a, 3),
                None if mean_b is None else round(mean_b, 3),
                with_interval(difference, interval),
            )
        )
    return rows


def channel_table(data: RunData, seed: int, resamples: int = RESAMPLES) -> Table | None:
    """The history-channel comparison, or None when no system ran with both modes."""
    pairs = channel_pairs(data)
    if not pairs:
        return None
    rows = [
        row for text, audio in pairs for row in channel_rows(data, text, audio, seed, resamples)
    ]
    return Table(
        "history_channel",
        "History as text against history as audio (paper section 6)",
        (
            "text history",
            "audio history",
            "value",
            "paired points",
            "text",
            "audio",
            "audio - text [95% CI]",
        ),
        tuple(rows),
        "Rollout 0 of each point both were scored on; recall over every history length; "
        "similarity where both replied with words. Intervals from resampling conversations "
        f"({resamples} resamples).",
    )
