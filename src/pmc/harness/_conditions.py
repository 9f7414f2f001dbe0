"""A rollout's inputs under the run's conditions (docs/conditions.md).

Noise, babble and the telephone change whole tracks, so they are applied here, before the
stream starts, to what the system hears of the person: the live stream and the background that
runs on after it, the person's clip at a talk-over point and the person's side of the history
where a system is given it as audio. The system's own side of the history is its own voice, not
heard through the room or the line, and stays as it was. Each rollout draws its own noise from
the condition's seed and its identity, so reruns are byte-identical and no two rollouts share a
noise.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from pmc.audio import SAMPLE_RATE, FloatArray
from pmc.conditions import (
    Concealment,
    Condition,
    ConditionKind,
    Echo,
    Network,
    NoiseColour,
    babble,
    coloured_noise,
    speech_power,
    telephone,
)
from pmc.errors import PmcError
from pmc.harness._inputs import live_for
from pmc.harness._rollout import RolloutJob
from pmc.points import Point

ONE_PATH = (ConditionKind.ECHO, ConditionKind.NETWORK)
"""The conditions a run can name once at most: a call has one echo path and one network."""


def condition_seed(condition: Condition, point_id: str, rollout: int) -> int:
    """The seed of one condition at one rollout: its own seed, name and the rollout's identity."""
    key = f"{condition.seed}|{condition.name}|{point_id}|{rollout}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big")


def refuse_conflicts(conditions: Sequence[Condition]) -> None:
    """Refuse, before any rollout, two echo paths or two networks in one run."""
    for kind in ONE_PATH:
        paths = [c for c in conditions if c.kind is kind]
        if len(paths) > 1:
            names = ", ".join(c.name for c in paths)
            raise PmcError(f"conditions {names}: one {kind.value} path at most")


def babble_voices(point: Point, points: Sequence[Point], voices: int, seed: int) -> list[Point]:
    """``voices`` points of other conversations, drawn with ``seed`` (never the point's own)."""
    others = sorted(
        {p.conversation_id: p for p in points if p.conversation_id != point.conversation_id}.items()
    )
    if not others:
        raise PmcError(
            f"point {point.point_id}: babble needs other conversations, and the points hold only "
            f"{point.conversation_id}"
        )
    rng = np.random.default_rng(seed)
    picked = rng.choice(len(others), size=min(voices, len(others)), replace=False)
    return [others[int(i)][1] for i in sorted(picked)]


def _noise(
    condition: Condition,
    samples: int,
    seed: int,
    point: Point,
    points: Sequence[Point],
    points_dir: Path,
) -> FloatArray:
    """A noise or babble condition's noise, ``samples`` long, at unit power."""
    rng = np.random.default_rng(seed)
    if condition.kind is ConditionKind.NOISE:
        return coloured_noise(
            NoiseColour(str(condition.params["colour"])), samples, rng, SAMPLE_RATE
        )
    voices = babble_voices(point, points, int(condition.number("voices")), seed)
    return babble([live_for(points_dir, p) for p in voices], samples, rng)


def _under(
    condition: Condition,
    track: FloatArray,
    level: float,
    seed: int,
    point: Point,
    points: Sequence[Point],
    points_dir: Path,
    span: int | None = None,
) -> FloatArray:
    """``track`` under one whole-track condition, noise set against speech power ``level``.

    The noise's power is taken over the first ``span`` samples (all: None), where the person
    speaks: babble is louder in some stretches than others, and the SNR is the one heard there.
    """
    if not len(track):
        return track
    if condition.kind is ConditionKind.TELEPHONE:
        low, high = condition.number("low_hz"), condition.number("high_hz")
        return telephone(track, SAMPLE_RATE, low, high)
    noise = _noise(condition, len(track), seed, point, points, points_dir).astype(np.float64)
    power = np.mean(noise[:span] ** 2)
    gain = np.sqrt(level / 10.0 ** (condition.number("snr_db") / 10.0) / power)
    return np.asarray(track + gain * noise, dtype=np.float32)


def with_conditions(
    job: RolloutJob,
    conditions: Sequence[Condition],
    points: Sequence[Point],
    points_dir: Path,
    tail_s: float,
) -> RolloutJob:
    """``job`` with what its system hears of the person under ``conditions``, in order.

    An echo condition is not applied here but handed to the rollout, which adds the system's
    own played output to every frame it sends, after the whole-track conditions (the echo is
    the system's voice in the caller's room, and it is not put through a phone line); so is the
    network, which delays each frame and loses some, on the way to the system.

    The noise runs on after the live stream for ``tail_s`` (the protocol's longest rollout
    after it): the room does not fall silent when the person does. It is set against the live
    stream's speech level, as is the noise of the person's side of the history. The person's
    clip at a talk-over point goes through the phone line but takes no noise of its own: it is
    heard over the noise that runs on (``RolloutJob.background``).
    """
    if not conditions:
        return job
    point = job.point
    level = speech_power(job.live, SAMPLE_RATE)
    if level is None and any(
        c.kind in (ConditionKind.NOISE, ConditionKind.BABBLE) for c in conditions
    ):
        raise PmcError(f"point {point.point_id}: its live stream holds no speech to set an SNR by")
    tail = np.zeros(round(tail_s * SAMPLE_RATE), dtype=np.float32)
    stream = np.concatenate([job.live, tail])
    clip, history = job.clip, job.preload.user_audio
    echo = network = None
    for condition in conditions:
        seed = condition_seed(condition, point.point_id, job.rollout)
        if condition.kind is ConditionKind.ECHO:
            delay, gain = condition.number("delay_ms"), condition.number("gain_db")
            echo = Echo(delay, gain, SAMPLE_RATE)
            continue
        if condition.kind is ConditionKind.NETWORK:
            concealment = Concealment(str(condition.params["concealment"]))
            jitter, loss = condition.number("jitter_ms"), condition.number("loss")
            network = Network(jitter, loss, concealment, seed)
            continue
        span = len(job.live)
        stream = _under(condition, stream, level or 0.0, seed, point, points, points_dir, span)
        history = _under(condition, history, level or 0.0, seed + 1, point, points, points_dir)
        if clip is not None and condition.kind is ConditionKind.TELEPHONE:
            clip = _under(condition, clip, level or 0.0, seed, point, points, points_dir)
    return replace(
        job,
        live=stream[: len(job.live)],
        clip=clip,
        preload=replace(job.preload, user_audio=history),
        background=stream,
        record_heard=True,
        echo=echo,
        network=network,
    )
