"""A hosted API's trade-off curve from its own VAD events, with no reply generated.

A detector-only card keeps the API's turn detection on at every point and asks it never to
answer (``create_response`` and ``interrupt_response`` false, ``params.endpointing = "all"``):
the API still reports where it heard speech start and stop. Gemini cannot be told not to answer;
its detector card asks for ``voiceActivity`` reports instead (``params.explicit_vad_signal``),
and its answers are recorded and left out of the curve. One variant of the card per setting is
run at the pause and turn-end points; a pause is held where no reported stop came inside
it, and the decision latency is the first after the turn end
(docs/architecture.md "Trade-off curves").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pmc import io
from pmc.curves._sweep import person_latency
from pmc.curves._types import Curve, CurvePoint
from pmc.errors import PmcError
from pmc.harness import TRACE_FILE, Run, RunSettings, run_rollouts, runs_dir
from pmc.points import MANIFEST_FILE, Point, PointKind, points_dir, read_points
from pmc.progress import Start
from pmc.systems import SystemCard

OPENAI_DETECTORS = ("openai-realtime", "grok-voice", "openai-compatible")
"""Adapters whose APIs report their VAD's decisions as events (OpenAI's event vocabulary)."""
GEMINI = "gemini-live"
DETECTOR_ADAPTERS = (*OPENAI_DETECTORS, GEMINI)
SPEECH_STOPPED = "input_audio_buffer.speech_stopped"
"""The event in which the API says its VAD heard speech stop: its endpointer's decision."""
ACTIVITY_END = "ACTIVITY_END"
"""Gemini's ``voiceActivity.voiceActivityType`` when its activity detection heard speech end."""
SILENCE_KEY = "silence_duration_ms"
GEMINI_SILENCE_KEY = "silenceDurationMs"
THRESHOLD_KEY = "threshold"
EAGERNESS_KEY = "eagerness"
EAGERNESS = ("low", "medium", "high", "auto")
"""Semantic VAD's eagerness, every value OpenAI's session accepts (the sweep's default)."""


def is_detector(card: SystemCard) -> bool:
    """Whether ``card`` is a detector-only card: events, never a generated answer."""
    if not card.endpoints_everywhere:
        return False
    if card.adapter == GEMINI:
        return card.params.get("explicit_vad_signal") is True
    return card.adapter in OPENAI_DETECTORS and card.turn_detection.get("create_response") is False


def _silence_key(card: SystemCard) -> str:
    return GEMINI_SILENCE_KEY if card.adapter == GEMINI else SILENCE_KEY


def variant(card: SystemCard, silence_ms: float, threshold: float | None) -> SystemCard:
    """The card at one setting, named after it, at the pause and turn-end points only."""
    turns = {**card.turn_detection, _silence_key(card): silence_ms}
    name = f"{card.name}-{silence_ms:g}ms"
    if threshold is not None:
        turns[THRESHOLD_KEY] = threshold
        name += f"-t{threshold:g}"
    return dataclasses.replace(
        card, name=name, turn_detection=turns, point_kinds=("pause", "turn_end")
    )


def eagerness_variant(card: SystemCard, eagerness: str) -> SystemCard:
    """The semantic-VAD card at one eagerness, named after it, at pauses and turn ends only."""
    turns = {**card.turn_detection, EAGERNESS_KEY: eagerness}
    return dataclasses.replace(
        card,
        name=f"{card.name}-{eagerness}",
        turn_detection=turns,
        point_kinds=("pause", "turn_end"),
    )


def _variants(
    card: SystemCard,
    silence_ms: Sequence[float],
    thresholds: Sequence[float],
    eagerness: Sequence[str],
) -> list[SystemCard]:
    """A variant per setting: server VAD's windows (and thresholds), or semantic eagerness."""
    kind = card.turn_detection.get("type")
    if card.adapter == GEMINI:
        if thresholds or eagerness:
            raise PmcError(
                f"system card {card.name}: Gemini's activity detection is swept over its "
                "silence window only (it has no threshold or eagerness)"
            )
        return [variant(card, float(ms), None) for ms in silence_ms]
    if kind == "semantic_vad":
        unknown = sorted(set(eagerness) - set(EAGERNESS))
        if unknown:
            raise PmcError(f"eagerness {', '.join(unknown)} is not one of {', '.join(EAGERNESS)}")
        return [eagerness_variant(card, e) for e in (eagerness or EAGERNESS)]
    if kind != "server_vad":
        raise PmcError(
            f"system card {card.name}: only server_vad's silence window or semantic_vad's "
            f"eagerness can be swept (turn_detection.type is {kind!r})"
        )
    if eagerness:
        raise PmcError(f"system card {card.name}: eagerness is semantic_vad's, not server_vad's")
    return [variant(card, float(ms), t) for t in (thresholds or (None,)) for ms in silence_ms]


def detector_sweep(
    workdir: Path,
    card: SystemCard,
    silence_ms: Sequence[float],
    thresholds: Sequence[float] = (),
    start: Start | None = None,
    eagerness: Sequence[str] = (),
) -> tuple[Curve, list[SystemCard]]:
    """Run a variant of the detector card per setting; the curve from their events.

    Server VAD is swept over ``silence_ms`` (and ``thresholds``), semantic VAD over
    ``eagerness`` (default: every value). The variants' rollouts go to ``runs/curve-<card>``
    (a rerun resumes them).
    """
    if not is_detector(card):
        raise PmcError(
            f"system card {card.name}: a hosted card is swept from its own VAD events only in "
            f'detector mode ([params] endpointing = "all", and [turn_detection] '
            f"create_response = false on {', '.join(OPENAI_DETECTORS)}, or [params] "
            f"explicit_vad_signal = true on {GEMINI})"
        )
    variants = _variants(card, silence_ms, thresholds, eagerness)
    run_id = f"curve-{card.name}"
    run_rollouts(workdir, variants, RunSettings(run_id), start)
    run = Run(runs_dir(workdir) / run_id)
    points = [p for p in read_points(workdir) if p.kind in (PointKind.PAUSE, PointKind.TURN_END)]
    settings = []
    for v in variants:
        held = pauses = 0
        decided: list[float] = []
        for point in points:
            path = run.rollout_dir(v.name, point.point_id, 0) / TRACE_FILE
            if not path.exists():
                continue  # a failed rollout: rerun the command to retry it
            stops = _stops(io.read_json(path), point)
            if point.kind is PointKind.PAUSE:
                pauses += 1
                held += not any(0.0 <= s < _pause_s(point) for s in stops)
            elif later := [s for s in stops if s >= 0.0]:
                decided.append(min(later))
        turns = v.turn_detection
        semantic = turns.get("type") == "semantic_vad"
        threshold = None if semantic or v.adapter == GEMINI else turns.get(THRESHOLD_KEY, 0.5)
        settings.append(
            CurvePoint(
                None if semantic else float(turns[_silence_key(v)]),
                None if threshold is None else float(threshold),
                pauses,
                held,
                sum(p.kind is PointKind.TURN_END for p in points),
                len(decided),
                float(np.median(decided)) if decided else None,
                setting=str(turns[EAGERNESS_KEY]) if semantic else "",
            )
        )
    curve = Curve(
        card.name,
        card.adapter,
        io.sha256_file(points_dir(workdir) / MANIFEST_FILE),
        tuple(settings),
        person_latency(points),
    )
    return curve, variants


def _pause_s(point: Point) -> float:
    return point.boundary_end_stream_s - point.boundary_stream_s


def _stops(trace: dict[str, Any], point: Point) -> list[float]:
    """When the API said speech stopped, on arrival, as delays after the point's boundary.

    OpenAI's ``speech_stopped`` event or Gemini's ``voiceActivity`` ``ACTIVITY_END``: both on
    their arrival, the moment a client could act on the decision.
    """
    t0 = int(trace["t0_ns"])
    return [
        (int(o["arrival_ns"]) - t0) / 1e9 - point.boundary_stream_s
        for o in trace.get("outputs", [])
        if o["kind"] == "signal" and _is_stop(o["detail"])
    ]


def _is_stop(detail: dict[str, Any]) -> bool:
    activity = detail.get("voiceActivity")
    if isinstance(activity, dict):
        return activity.get("voiceActivityType") == ACTIVITY_END
    return detail.get("type") == SPEECH_STOPPED
