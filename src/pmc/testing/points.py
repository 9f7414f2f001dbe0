"""A small point set in the points stage's real format, spoken by the bundled voice.

Tests of the harness and later stages need points without building the whole demo: this writes
``points/manifest.jsonl`` and each point's cuts (history of both speakers, live stream, reply,
history as text) exactly as ``pmc points`` does, with known boundaries.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pmc import io
from pmc.audio import SAMPLE_RATE, FloatArray, wav_bytes
from pmc.corpus import Channel
from pmc.points import MANIFEST_FILE, Point, PointKind, point_id
from pmc.tts import VoiceHint, create_tts

FRAME = 1920
"""Cuts are whole 80 ms frames, as the points stage writes them."""


@dataclass(frozen=True)
class Spoken:
    """A spoken text and its audio."""

    text: str
    audio: FloatArray


def speak(text: str, pitch: float = 1.0) -> Spoken:
    """``text`` in the bundled voice (speaker B's pitch is 1.4, as in the demo)."""
    return Spoken(text, create_tts().speak(text, VoiceHint(pitch=pitch)))


def silence(seconds: float) -> FloatArray:
    """Digital silence."""
    return np.zeros(round(seconds * SAMPLE_RATE), dtype=np.float32)


def _frames(audio: FloatArray) -> FloatArray:
    return np.concatenate([audio, np.zeros(-len(audio) % FRAME, dtype=np.float32)])


def _write(folder: Path, name: str, audio: FloatArray) -> str:
    io.write_bytes(folder / name, wav_bytes(_frames(audio), SAMPLE_RATE))
    return name


HISTORY = [
    ("user", "We drove to the coast last weekend with my sister."),
    ("assistant", "Oh nice, did you stay in that little blue cottage again?"),
    ("user", "Yes, and my sister brought her new dog, a spaniel called Biscuit."),
]


def write_points(workdir: Path, conversation: str = "conv-1") -> list[Point]:
    """Write four points of one conversation: a pause, two turn ends and a fact recall.

    Speaker A is the user and B the system, except at recall, where B asks (as in the demo).
    Boundaries are exact: they are where the spoken audio ends.
    """
    out = workdir / "points"
    history_user = np.concatenate([speak(HISTORY[0][1]).audio, silence(3.0)])
    history_system = np.concatenate([silence(3.0), speak(HISTORY[1][1], 1.4).audio])
    messages = [{"role": role, "text": text} for role, text in HISTORY]
    points: list[Point] = []

    def add(
        kind: PointKind,
        at_s: float,
        live: FloatArray,
        boundary_s: float,
        boundary_end_s: float,
        reply: Spoken | None = None,
        reply_start_s: float | None = None,
        question: str = "",
        answer: str = "",
    ) -> None:
        stream_start = 100.0 + at_s  # a conversation-clock origin well inside a recording
        pid = point_id(conversation, kind, stream_start + boundary_s)
        folder = out / "audio" / pid
        cuts = {
            "history_user": _write(folder, "history_user.wav", history_user),
            "history_system": _write(folder, "history_system.wav", history_system),
            "live": _write(folder, "live.wav", live),
        }
        io.write_json(folder / "history.json", {"messages": messages})
        cuts["history_text"] = "history.json"
        if reply is not None:
            cuts["reply"] = _write(folder, "reply.wav", reply.audio)
        recall = kind in (PointKind.FACT_RECALL, PointKind.CONVERSATION_RECALL)
        points.append(
            Point(
                point_id=pid,
                kind=kind,
                conversation_id=conversation,
                user=Channel.B if recall else Channel.A,
                system=Channel.A if recall else Channel.B,
                history_start_conv_s=stream_start - len(history_user) / SAMPLE_RATE,
                stream_start_conv_s=stream_start,
                boundary_conv_s=stream_start + boundary_s,
                boundary_stream_s=boundary_s,
                boundary_end_conv_s=stream_start + boundary_end_s,
                boundary_end_stream_s=boundary_end_s,
                stream_end_conv_s=stream_start + len(_frames(live)) / SAMPLE_RATE,
                reply_start_conv_s=None if reply_start_s is None else stream_start + reply_start_s,
                reply_end_conv_s=(
                    None
                    if reply is None or reply_start_s is None
                    else stream_start + reply_start_s + len(reply.audio) / SAMPLE_RATE
                ),
                reply_text=answer or (reply.text if reply else ""),
                question=question,
                gold_answer=answer,
                prefix_s=30.0 if recall else None,
                identity_prompt="You are Sam, talking with an old friend.",
                cuts={k: f"audio/{pid}/{v}" for k, v in cuts.items()},
            )
        )

    first = speak("So the cottage was lovely,")
    then = speak("and the beach was right outside the door.")
    pause_live = np.concatenate([first.audio, silence(1.0), then.audio])
    first_s = len(first.audio) / SAMPLE_RATE
    add(PointKind.PAUSE, 0.0, pause_live, first_s, first_s + 1.0)

    for at_s, turn, reply in (
        (20.0, "Biscuit ran straight into the sea.", "Ha, spaniels love the water."),
        (40.0, "We are going back there in June.", "Lucky you, June is perfect there."),
    ):
        spoken = speak(turn)
        end_s = len(spoken.audio) / SAMPLE_RATE
        add(PointKind.TURN_END, at_s, spoken.audio, end_s, end_s, speak(reply, 1.4), end_s + 0.4)

    question = speak("What is the capital of France?", 1.4)
    q_end = len(_frames(question.audio)) / SAMPLE_RATE
    add(
        PointKind.FACT_RECALL,
        60.0,
        question.audio,
        q_end,
        q_end,
        question=question.text,
        answer="Paris",
    )
    points.sort(key=lambda p: (p.kind.value, p.point_id))
    with io.atomic_open(out / MANIFEST_FILE) as handle:
        for p in points:
            handle.write(io.json_line(p.to_dict()))
    return points
