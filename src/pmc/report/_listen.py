"""A rollout to listen to: one stereo file, the person on the left and the system on the right.

Both channels are on the stream clock, so the exchange is heard as it happened:

- left, the person (the speaker the system listens to): the last :data:`HISTORY_TAIL_S` seconds
  of the person's history track, then the live input as it was streamed (its first ``live_s``
  seconds);
- right, the system's seat: before t = 0 the last :data:`HISTORY_TAIL_S` seconds of the
  history's other track (what was said from the seat the system takes, which the system was
  given as its own past), from t = 0 the system's played track (``played.flac``).

Without the other track the lead-in would be silence at most points: a pause's or a turn end's
live stream starts with the person's turn, so the seconds before it are the other side
speaking. Stream time 0 is the first live sample, where the history ends, so the file starts at
``-HISTORY_TAIL_S`` on the stream clock and runs to the rollout's end (:func:`rollout_end_s`).
A history shorter than the tail is padded with silence in front, so the file's clock never
moves. Samples are copied as PCM16, not decoded to float and coded again, so each channel
holds its sources' samples exactly.

The person's speech on the timeline comes from the same left channel, through the speech gate
(:func:`person_speech`).

A rollout of a run under conditions also kept what the system actually heard (``heard.flac``:
its input frames as sent, back to back, from the first live frame); the report copies it beside
the stereo file (:func:`copy_heard`), so the page plays it too.
"""

from __future__ import annotations

import io as _io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import soundfile as sf

from pmc.audio import SAMPLE_RATE
from pmc.gate import GateParams, OnsetRule, speech_intervals
from pmc.harness import HEARD_FILE, PLAYED_FILE
from pmc.points import Point
from pmc.report._rollouts import RolloutView

HISTORY_TAIL_S = 5.0
"""Seconds of the history played before the live input: enough to hear the lead-in to the
moment (about two of the corpus's turns; the paper's median turn is 2.4 s) without making a
reader sit through the whole history, which runs to minutes."""
STEREO_DIR = "audio"
"""The report's folder of rollout files."""

Pcm = npt.NDArray[np.int16]


def _pcm(path: Path) -> Pcm:
    """A mono PCM16 file's samples as they are stored."""
    data, _ = sf.read(str(path), dtype="int16", always_2d=True)
    return np.ascontiguousarray(data[:, 0])


@dataclass(frozen=True)
class PointAudio:
    """A point's two sides on the stream clock, each from ``-HISTORY_TAIL_S``.

    Attributes:
        person: The person's history tail, then the whole live cut.
        seat: The history's other track, the seat the system takes: its tail only.
        clip: At a talk-over point, the person's talk over the reply (played where the trace
            says it was).
    """

    person: Pcm
    seat: Pcm
    clip: Pcm | None = None


def _tail(pdir: Path, point: Point, cut: str) -> Pcm:
    """The last ``HISTORY_TAIL_S`` of a history track, padded with silence in front."""
    tail_n = round(HISTORY_TAIL_S * SAMPLE_RATE)
    tail = np.zeros(tail_n, dtype=np.int16)
    path = pdir / point.cuts.get(cut, "")
    if cut in point.cuts and path.exists():
        last = _pcm(path)[-tail_n:]
        if len(last):
            tail[tail_n - len(last) :] = last
    return tail


def point_audio(point: Point | None, pdir: Path) -> PointAudio | None:
    """A point's audio for its rollouts; None where the point or its live cut is missing."""
    if point is None or "live" not in point.cuts or not (pdir / point.cuts["live"]).exists():
        return None
    person = np.concatenate([_tail(pdir, point, "history_user"), _pcm(pdir / point.cuts["live"])])
    clip_path = pdir / point.cuts.get("inject", "")
    clip = _pcm(clip_path) if "inject" in point.cuts and clip_path.exists() else None
    return PointAudio(person, _tail(pdir, point, "history_system"), clip)


def clip_at_s(r: RolloutView) -> float | None:
    """Where the person's clip was played (talk-over points; None where it was not)."""
    protocol = r.trace.protocol if r.trace else None
    return None if protocol is None else protocol.clip_stream_s


def person_track(audio: PointAudio, live: float, n: int, clip_at: float | None = None) -> Pcm:
    """What the system heard of the person from ``-HISTORY_TAIL_S``, ``n`` samples long.

    The history's tail, the live input up to ``live`` seconds in, and the clip where it played.
    """
    tail_n = round(HISTORY_TAIL_S * SAMPLE_RATE)
    out = np.zeros(n, dtype=np.int16)
    left = audio.person[: min(tail_n + round(live * SAMPLE_RATE), n)]
    out[: len(left)] = left
    if audio.clip is not None and clip_at is not None:
        at = tail_n + round(clip_at * SAMPLE_RATE)
        piece = audio.clip[: max(0, n - at)]
        out[at : at + len(piece)] = piece
    return out


def live_s(r: RolloutView, audio: PointAudio | None) -> float:
    """How much live input the rollout streamed (the whole live cut where no trace says)."""
    protocol = r.trace.protocol if r.trace else None
    if protocol is not None:
        return float(protocol.live_s)
    if audio is None:
        return 0.0
    return (len(audio.person) - round(HISTORY_TAIL_S * SAMPLE_RATE)) / SAMPLE_RATE


def rollout_end_s(r: RolloutView, audio: PointAudio | None) -> float:
    """Where the rollout ends on the stream clock: its stop as the trace records it.

    The played track is made exactly that long. Without a protocol record it is the played
    track's length; for a rollout that failed before playing anything, the live input's.
    """
    protocol = r.trace.protocol if r.trace else None
    if protocol is not None:
        return float(protocol.stop_stream_s)
    played = r.folder / PLAYED_FILE
    if played.exists():
        return float(sf.info(str(played)).duration)  # the header only
    return live_s(r, audio)


def stereo(
    audio: PointAudio | None,
    played: Pcm | None,
    live: float,
    end_s: float,
    clip_at: float | None = None,
) -> Pcm:
    """The ``(frames, 2)`` track from ``-HISTORY_TAIL_S`` to ``end_s``: person left, system right.

    The person's channel stops where the streamed live input stops (``live`` seconds in), and
    holds the clip where it was played (``clip_at``, talk-over points).
    """
    tail_n = round(HISTORY_TAIL_S * SAMPLE_RATE)
    n = tail_n + round(end_s * SAMPLE_RATE)
    out = np.zeros((n, 2), dtype=np.int16)
    if audio is not None:
        out[:, 0] = person_track(audio, live, n, clip_at)
        seat = audio.seat[:n]
        out[: len(seat), 1] = seat
    if played is not None:
        right = played[: n - tail_n]
        out[tail_n : tail_n + len(right), 1] = right
    return out


def write_stereo(folder: Path, r: RolloutView, audio: PointAudio | None) -> str | None:
    """Write a rollout's stereo FLAC into the report; its path relative to the folder.

    None where there is nothing to hear (no live input and nothing played).
    """
    played_path = r.folder / PLAYED_FILE
    played = _pcm(played_path) if played_path.exists() else None
    if audio is None and played is None:
        return None
    track = stereo(audio, played, live_s(r, audio), rollout_end_s(r, audio), clip_at_s(r))
    rel = f"{STEREO_DIR}/{r.system}/{r.point_id}-{r.k}.flac"
    buffer = _io.BytesIO()
    sf.write(buffer, track, SAMPLE_RATE, format="FLAC", subtype="PCM_16")
    # A plain write, as the pages are: the report is rewritten whole.
    path = folder / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buffer.getvalue())
    return rel


def copy_heard(folder: Path, r: RolloutView) -> str | None:
    """Copy what a rollout's system heard into the report; its path relative to the folder.

    None where the rollout kept none (a clean run's rollouts do not). The bytes are copied as
    they are, so the page plays exactly what the harness sent.
    """
    source = r.folder / HEARD_FILE
    if not source.exists():
        return None
    rel = f"{STEREO_DIR}/{r.system}/{r.point_id}-{r.k}-heard.flac"
    path = folder / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(source.read_bytes())  # a plain write, as the stereo file's
    return rel


def _gated(samples: Pcm, gate: GateParams, onset: OnsetRule) -> tuple[tuple[float, float], ...]:
    """Speech intervals of a track that starts at ``-HISTORY_TAIL_S``, on the stream clock."""
    heard = samples.astype(np.float32) / 32768.0  # as soundfile reads PCM16 for scoring
    return tuple(
        (i.start_s - HISTORY_TAIL_S, i.end_s - HISTORY_TAIL_S)
        for i in speech_intervals(heard, gate, SAMPLE_RATE, onset)
    )


def person_speech(
    audio: PointAudio | None,
    live: float,
    gate: GateParams,
    onset: OnsetRule,
    clip_at: float | None = None,
) -> tuple[tuple[float, float], ...]:
    """The person's speech on the stream clock, by the speech gate.

    The gate runs on the history's tail and the streamed live input as one track (the history
    ends where the live input begins), so speech that runs across t = 0 is one interval; at a
    talk-over point, on the clip too, where it was played.
    """
    if audio is None:
        return ()
    tail_n = round(HISTORY_TAIL_S * SAMPLE_RATE)
    n = tail_n + round(live * SAMPLE_RATE)
    if audio.clip is not None and clip_at is not None:
        n = max(n, tail_n + round(clip_at * SAMPLE_RATE) + len(audio.clip))
    return _gated(person_track(audio, live, n, clip_at), gate, onset)


def seat_speech(
    audio: PointAudio | None, gate: GateParams, onset: OnsetRule
) -> tuple[tuple[float, float], ...]:
    """Speech from the system's seat in the history's tail, on the stream clock (all before 0)."""
    return () if audio is None else _gated(audio.seat, gate, onset)
