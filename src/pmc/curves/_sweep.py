"""Sweep a local endpointer's settings over a working directory's points, deciding only.

Each pause and turn-end point's live stream (and a silent tail, as the harness streams after
it) is heard once; every setting then replays the system's decisions on it (the cascade's,
:func:`pmc.systems.replay_cascade`; Smart Turn's, ``_smart_turn``) without recognising or
voicing anything (docs/architecture.md "Trade-off curves").
"""

from __future__ import annotations

import csv
import io as text_io
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from pmc import io
from pmc.audio import FloatArray
from pmc.curves._cards import bundled_like
from pmc.curves._smart_turn import SMART_TURN_ADAPTER, smart_turn_replays
from pmc.curves._types import CURVES_DIR, Curve, CurvePoint
from pmc.errors import PmcError
from pmc.harness import live_for
from pmc.points import MANIFEST_FILE, Point, PointKind, points_dir, read_points
from pmc.progress import Start
from pmc.systems import (
    CascadeSetting,
    ReplayedReply,
    ReplyShape,
    SystemCard,
    heard_windows,
    replay_cascade,
)

SWEPT_ADAPTER = "endpointer-cascade"
"""The silence endpointer's adapter, whose decisions depend only on its input."""
SWEPT_ADAPTERS = (SWEPT_ADAPTER, SMART_TURN_ADAPTER)
"""The adapters whose decisions depend only on the input and can be replayed."""
DEFAULT_SILENCE_MS = tuple(float(ms) for ms in range(100, 2001, 100))
"""Twenty silence windows, 0.1 to 2 s, through both bundled endpointer cards (300, 500 ms)."""
MIN_WORDS_S = 0.25
"""Reply speech shorter than this inside a pause carries no word scoring finds (the hosted
end-to-end tests' bound: an answer heard under 0.25 s has no words), so it takes no pause."""
TAIL_MARGIN_S = 1.0
"""Silence streamed after the live audio beyond the longest window, reply latency and reply:
every setting's endpoint after a turn end falls inside it."""


def took_pause(replies: Sequence[ReplayedReply], start_s: float, end_s: float) -> bool:
    """Whether any reply spoke words inside the pause ``[start_s, end_s)`` (stream clock)."""
    return any(
        r.ends_s - r.speech_s >= MIN_WORDS_S and r.speech_s < end_s and r.ends_s > start_s
        for r in replies
    )


def decision_after(replies: Sequence[ReplayedReply], boundary_s: float) -> float | None:
    """The first endpoint at or after the turn end, as a delay after it."""
    later = [r.decided_s - boundary_s for r in replies if r.decided_s >= boundary_s - 1e-9]
    return min(later, default=None)


Replays = Callable[[FloatArray], Iterator[list[ReplayedReply]]]
"""Every setting's replies on one point's live audio, in the order of the settings."""


def _cascade(
    card: SystemCard, silence_ms: Sequence[float], thresholds: Sequence[float]
) -> tuple[list[tuple[float, float]], Replays, Callable[[float, float], tuple[str, ...]]]:
    base = CascadeSetting.of_card(card)
    settings = [
        CascadeSetting(float(ms), float(t), base.min_speech_ms)
        for t in (thresholds or (base.threshold,))
        for ms in silence_ms
    ]
    reply = ReplyShape.of_card(card)
    tail_s = max(silence_ms) / 1000 + reply.latency_s + reply.length_s + TAIL_MARGIN_S
    frame_s = card.frame_ms / 1000

    def replays(audio: FloatArray) -> Iterator[list[ReplayedReply]]:
        windows = heard_windows(audio, card, tail_s)
        for setting in settings:
            yield replay_cascade(windows, frame_s, setting, reply)

    def cards(ms: float, threshold: float) -> tuple[str, ...]:
        setting = CascadeSetting(ms, threshold, base.min_speech_ms)
        return bundled_like(card, lambda c: CascadeSetting.of_card(c) == setting)

    return [(s.silence_ms, s.threshold) for s in settings], replays, cards


def sweep(
    workdir: Path,
    card: SystemCard,
    silence_ms: Sequence[float] = DEFAULT_SILENCE_MS,
    thresholds: Sequence[float] = (),
    start: Start | None = None,
) -> Curve:
    """The curve of ``card`` over ``silence_ms`` (and ``thresholds``; default: the card's own).

    For an endpointer cascade the silence window and Silero's threshold; for Pipecat's Smart
    Turn the VAD's stop (in ms) and the model's threshold on its probability.
    """
    if card.adapter not in SWEPT_ADAPTERS:
        raise PmcError(
            f"system card {card.name}: only {' and '.join(SWEPT_ADAPTERS)} cards can be swept "
            f"by replay (their decisions depend on the input alone); this one is {card.adapter}"
        )
    if not silence_ms or any(ms <= 0 for ms in silence_ms):
        raise PmcError("every silence window must be more than 0 ms")
    if card.adapter == SWEPT_ADAPTER:
        settings, replays, cards = _cascade(card, silence_ms, thresholds)
    else:
        settings, replays, cards = smart_turn_replays(card, silence_ms, thresholds, TAIL_MARGIN_S)
    points = [p for p in read_points(workdir) if p.kind in (PointKind.PAUSE, PointKind.TURN_END)]
    if not points:
        raise PmcError(f"{points_dir(workdir)}: no pause or turn-end points to sweep over")
    held = [0] * len(settings)
    decided: list[list[float]] = [[] for _ in settings]
    advance = start(len(points)) if start else (lambda: None)
    for point in points:
        for i, replies in enumerate(replays(live_for(points_dir(workdir), point))):
            if point.kind is PointKind.PAUSE:
                held[i] += not took_pause(
                    replies, point.boundary_stream_s, point.boundary_end_stream_s
                )
            elif (delay := decision_after(replies, point.boundary_stream_s)) is not None:
                decided[i].append(delay)
        advance()
    pauses = sum(p.kind is PointKind.PAUSE for p in points)
    ends = len(points) - pauses
    curve = Curve(
        card.name,
        card.adapter,
        io.sha256_file(points_dir(workdir) / MANIFEST_FILE),
        tuple(
            CurvePoint(
                ms,
                threshold,
                pauses,
                held[i],
                ends,
                len(decided[i]),
                float(np.median(decided[i])) if decided[i] else None,
                cards(ms, threshold),
            )
            for i, (ms, threshold) in enumerate(settings)
        ),
        person_latency(points),
    )
    write_curve(workdir, curve)
    return curve


def person_latency(points: Sequence[Point]) -> float | None:
    """The person's median gap at the turn ends of ``points`` (they hold every pause)."""
    gaps = [
        p.reply_start_conv_s - p.boundary_conv_s
        for p in points
        if p.kind is PointKind.TURN_END and p.reply_start_conv_s is not None
    ]
    return float(np.median(gaps)) if gaps else None


def curve_path(workdir: Path, card: str) -> Path:
    """Where a card's curve is kept."""
    return workdir / CURVES_DIR / f"{card}.json"


def write_curve(workdir: Path, curve: Curve) -> Path:
    """Write ``curves/<card>.json`` and a CSV beside it; return the JSON's path."""
    path = curve_path(workdir, curve.card)
    io.write_json(path, curve.to_dict())
    buffer = text_io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    columns = list(CurvePoint.__dataclass_fields__)
    writer.writerow([*columns[:4], "hold_rate", *columns[4:]])
    for s in curve.settings:
        row = s.to_dict()
        writer.writerow(
            [
                row[c] if c != "cards" else " ".join(row[c])
                for c in (*columns[:4], "hold_rate", *columns[4:])
            ]
        )
    io.write_bytes(path.with_suffix(".csv"), buffer.getvalue().encode())
    return path


def read_curves(workdir: Path) -> list[Curve]:
    """Every curve kept for a working directory's current points."""
    folder = workdir / CURVES_DIR
    manifest = points_dir(workdir) / MANIFEST_FILE
    if not folder.is_dir() or not manifest.exists():
        return []
    digest = io.sha256_file(manifest)
    curves = [Curve.from_dict(io.read_json(p)) for p in sorted(folder.glob("*.json"))]
    return [c for c in curves if c.points_manifest_sha256 == digest]
