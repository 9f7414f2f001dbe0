"""Full-Duplex-Bench v1's sample folders from pmc's rollouts (docs/exports.md "Full-Duplex-Bench").

Each exported rollout becomes one sample folder in the task it fits, with the files that task's
evaluation script reads: ``input.wav`` (what the system heard), ``output.wav`` (what it said),
both 16 kHz mono and both starting at the stream clock's origin, ``output.json`` (its words with
their times) and the task's annotation file. Every time here is on the stream clock
(``*_stream_s``), which is the two WAV files' own clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from pmc.asr import TimedWord
from pmc.audio import SAMPLE_RATE, FloatArray, resample
from pmc.points import Point, PointKind
from pmc.scoring import Score

FDB_SAMPLE_RATE = 16_000
"""Full-Duplex-Bench's audio rate: its recogniser (Parakeet) and Silero VAD read 16 kHz mono."""
TIME_DIGITS = 4
"""Times are written to 0.1 ms, as pmc's scores write them."""


class FdbTask(StrEnum):
    """The Full-Duplex-Bench v1 tasks a pmc point kind maps to (folder names of the export)."""

    PAUSE_HANDLING = "pause_handling"
    SMOOTH_TURN_TAKING = "smooth_turn_taking"
    USER_INTERRUPTION = "user_interruption"

    @property
    def annotation_file(self) -> str:
        """The task's annotation file in each sample folder."""
        return _ANNOTATION[self]


_ANNOTATION = {
    FdbTask.PAUSE_HANDLING: "pause.json",
    FdbTask.SMOOTH_TURN_TAKING: "turn_taking.json",
    FdbTask.USER_INTERRUPTION: "interrupt.json",
}

TASKS: dict[PointKind, FdbTask] = {
    PointKind.PAUSE: FdbTask.PAUSE_HANDLING,
    PointKind.TURN_END: FdbTask.SMOOTH_TURN_TAKING,
    PointKind.BARGE_IN: FdbTask.USER_INTERRUPTION,
}
"""The kinds with a Full-Duplex-Bench counterpart. The others have none: recall (FDB does not
test memory), and pmc's backchannel (the person backchannels into the system's reply, where
FDB's backchannel task asks whether the *system* backchannels during a user's monologue)."""


def task_for(kind: PointKind) -> FdbTask | None:
    """The task a point kind is exported into; None for a kind with no FDB counterpart."""
    return TASKS.get(kind)


def _t(seconds: float) -> float:
    return round(float(seconds), TIME_DIGITS)


def output_json(words: Sequence[TimedWord], from_stream_s: float = 0.0) -> dict[str, Any]:
    """``output.json``: the words of the output that begin at ``from_stream_s`` or later.

    ``{"text": words joined by spaces, "chunks": [{"text": word, "timestamp": [start_s,
    end_s]}]}``, times on the stream clock in seconds, in the order spoken. FDB's own
    transcription step crops a user-interruption output at the interruption's end and keeps
    times on the uncropped clock; ``from_stream_s`` does the same.
    """
    kept = sorted((w for w in words if w.start_s >= from_stream_s), key=lambda w: w.start_s)
    texts = [w.text.strip() for w in kept]
    chunks = [
        {"text": text, "timestamp": [_t(w.start_s), _t(max(w.end_s, w.start_s))]}
        for text, w in zip(texts, kept, strict=True)
    ]
    return {"text": " ".join(texts), "chunks": chunks}


def pause_json(point: Point) -> list[dict[str, Any]]:
    """``pause.json``: the labelled pause, from the speaker stopping to their resuming."""
    return [
        {
            "text": "[PAUSE]",
            "timestamp": [_t(point.boundary_stream_s), _t(point.boundary_end_stream_s)],
        }
    ]


def turn_taking_json(point: Point) -> list[dict[str, Any]]:
    """``turn_taking.json``: from the end of the person's turn to their partner's reply.

    FDB measures latency from the first time (its ``input_end_time``); the second is where the
    person who really replied began (the turn end again when the corpus has no reply time).
    """
    reply = point.boundary_stream_s
    if point.reply_start_conv_s is not None:
        reply += max(0.0, point.reply_start_conv_s - point.boundary_conv_s)
    return [{"text": "[TURN-TAKING]", "timestamp": [_t(point.boundary_stream_s), _t(reply)]}]


def interrupt_json(
    point: Point, context: str, onset_stream_s: float, end_stream_s: float
) -> list[dict[str, Any]]:
    """``interrupt.json``: what the person had said, their interruption, and when it was played.

    ``context`` is the person's live turn; ``onset_stream_s`` and ``end_stream_s`` are where the
    clip began and ended on this rollout's stream (the harness plays it after the system's own
    reply began, so each rollout has its own).
    """
    return [
        {
            "context": context,
            "interrupt": point.inject_text,
            "timestamp": [_t(onset_stream_s), _t(end_stream_s)],
        }
    ]


def mix_input(live: FloatArray, clip: FloatArray | None, clip_onset_stream_s: float) -> FloatArray:
    """What the system heard on the stream clock: the live stream, and the clip where it played."""
    if clip is None:
        return live
    at = round(clip_onset_stream_s * SAMPLE_RATE)
    out = np.zeros(max(len(live), at + len(clip)), dtype=np.float32)
    out[: len(live)] += live
    out[at : at + len(clip)] += clip
    return np.clip(out, -1.0, 1.0)


def at_fdb_rate(track: FloatArray) -> FloatArray:
    """A 24 kHz track at FDB's 16 kHz."""
    return resample(track, SAMPLE_RATE, FDB_SAMPLE_RATE)


@dataclass(frozen=True)
class FdbSample:
    """One exported sample folder.

    Attributes:
        system: The card's name.
        task: The FDB task.
        folder: The folder's name under ``<system>/<task>/`` (digits, numbered from 1).
        point_id: The pmc point.
        rollout: The rollout index.
    """

    system: str
    task: FdbTask
    folder: str
    point_id: str
    rollout: int

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (a line of ``index.json``)."""
        return {
            "system": self.system,
            "task": self.task.value,
            "folder": self.folder,
            "point_id": self.point_id,
            "rollout": self.rollout,
        }


def interruption_window(score: Score) -> tuple[float, float] | None:
    """The played clip's onset and end on the stream clock; None when it was never played."""
    clip = score.clip
    if clip is None or not clip.reached or clip.onset_s is None or clip.clip_end_s is None:
        return None
    return clip.onset_s, clip.clip_end_s
