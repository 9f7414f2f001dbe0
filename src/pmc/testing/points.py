"""A small point set in the points stage's real format, spoken by the bundled voice.

Tests of the harness and later stages need points without building the whole demo: this writes
``points/manifest.jsonl`` and each point's cuts (history of both speakers, live stream, reply,
history as text) exactly as ``pmc points`` does, with known boundaries.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pmc import io
from pmc.audio import SAMPLE_RATE, FloatArray, wav_bytes
from pmc.corpus import Channel
from pmc.gate import GateParams, OnsetRule, refine_end, speech_intervals
from pmc.points import MANIFEST_FILE, Point, PointKind, point_id
from pmc.testing.speech import spoken

FRAME = 1920
"""Cuts are whole 80 ms frames, as the points stage writes them."""


@dataclass(frozen=True)
class Spoken:
    """A spoken text and its audio."""

    text: str
    audio: FloatArray


def speak(text: str, pitch: float = 1.0) -> Spoken:
    """``text`` in the bundled voice (speaker B's pitch is 1.4, as in the demo)."""
    return Spoken(text, spoken(text, pitch))


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


@dataclass(frozen=True)
class _Conversation:
    """Where a conversation's points go, and the history every one of them is given."""

    out: Path
    conversation: str
    history_user: FloatArray
    history_system: FloatArray

    @classmethod
    def at(cls, workdir: Path, conversation: str) -> _Conversation:
        history_user = np.concatenate([speak(HISTORY[0][1]).audio, silence(3.0)])
        history_system = np.concatenate([silence(3.0), speak(HISTORY[1][1], 1.4).audio])
        return cls(workdir / "points", conversation, history_user, history_system)

    def point(
        self,
        kind: PointKind,
        stream_start: float,
        live: FloatArray,
        boundary_s: float,
        boundary_end_s: float,
        reply: Spoken | None = None,
        reply_start_s: float | None = None,
        clip: Spoken | None = None,
        extra: str = "",
        **fields: Any,
    ) -> Point:
        """Write one point's cuts; the point, its other fields (``fields``) as given."""
        pid = point_id(self.conversation, kind, stream_start + boundary_s, extra)
        folder = self.out / "audio" / pid
        cuts = {
            "history_user": _write(folder, "history_user.wav", self.history_user),
            "history_system": _write(folder, "history_system.wav", self.history_system),
            "live": _write(folder, "live.wav", live),
        }
        messages = [{"role": role, "text": text} for role, text in HISTORY]
        io.write_json(folder / "history.json", {"messages": messages})
        cuts["history_text"] = "history.json"
        if reply is not None:
            cuts["reply"] = _write(folder, "reply.wav", reply.audio)
        if clip is not None:
            cuts["inject"] = _write(folder, "inject.wav", clip.audio)
        recall = kind in (PointKind.FACT_RECALL, PointKind.CONVERSATION_RECALL)
        reply_end = None
        if reply is not None and reply_start_s is not None:
            reply_end = stream_start + reply_start_s + len(reply.audio) / SAMPLE_RATE
        return Point(
            point_id=pid,
            kind=kind,
            conversation_id=self.conversation,
            user=Channel.B if recall else Channel.A,
            system=Channel.A if recall else Channel.B,
            history_start_conv_s=stream_start - len(self.history_user) / SAMPLE_RATE,
            stream_start_conv_s=stream_start,
            boundary_conv_s=stream_start + boundary_s,
            boundary_stream_s=boundary_s,
            boundary_end_conv_s=stream_start + boundary_end_s,
            boundary_end_stream_s=boundary_end_s,
            stream_end_conv_s=stream_start + len(_frames(live)) / SAMPLE_RATE,
            reply_start_conv_s=None if reply_start_s is None else stream_start + reply_start_s,
            reply_end_conv_s=reply_end,
            reply_text=fields.pop("reply_text", reply.text if reply else ""),
            prefix_s=30.0 if recall else None,
            identity_prompt="You are Sam, talking with an old friend.",
            cuts={k: f"audio/{pid}/{v}" for k, v in cuts.items()},
            **fields,
        )

    def write(self, points: list[Point]) -> list[Point]:
        """Write the manifest of ``points``; them, sorted as the points stage sorts."""
        points.sort(key=lambda p: (p.kind.value, p.point_id))
        with io.atomic_open(self.out / MANIFEST_FILE) as handle:
            for p in points:
                handle.write(io.json_line(p.to_dict()))
        return points


def write_points(workdir: Path, conversation: str = "conv-1") -> list[Point]:
    """Write four points of one conversation: a pause, two turn ends and a fact recall.

    Speaker A is the user and B the system, except at recall, where B asks (as in the demo).
    Boundaries are exact: they are where the spoken audio ends.
    """
    at = _Conversation.at(workdir, conversation)
    first = speak("So the cottage was lovely,")
    then = speak("and the beach was right outside the door.")
    pause_live = np.concatenate([first.audio, silence(1.0), then.audio])
    first_s = len(first.audio) / SAMPLE_RATE
    points = [at.point(PointKind.PAUSE, 100.0, pause_live, first_s, first_s + 1.0)]
    for at_s, turn, reply in (
        (20.0, "Biscuit ran straight into the sea.", "Ha, spaniels love the water."),
        (40.0, "We are going back there in June.", "Lucky you, June is perfect there."),
    ):
        spoken = speak(turn)
        end_s = len(spoken.audio) / SAMPLE_RATE
        points.append(
            at.point(
                PointKind.TURN_END,
                100.0 + at_s,
                spoken.audio,
                end_s,
                end_s,
                speak(reply, 1.4),
                end_s + 0.4,
            )
        )
    question = speak("What is the capital of France?", 1.4)
    q_end = len(_frames(question.audio)) / SAMPLE_RATE
    points.append(
        at.point(
            PointKind.FACT_RECALL,
            160.0,
            question.audio,
            q_end,
            q_end,
            reply_text="Paris",
            question=question.text,
            gold_answer="Paris",
        )
    )
    return at.write(points)


def _trimmed(spoken: Spoken) -> Spoken:
    """The speech from its onset to its end as scoring finds them (the voice's silence cut off)."""
    found = speech_intervals(spoken.audio, onset=OnsetRule.ENVELOPE)
    first = round(found[0].start_s * SAMPLE_RATE)
    last = refine_end(spoken.audio, round(found[-1].end_s * SAMPLE_RATE), GateParams(), SAMPLE_RATE)
    return Spoken(spoken.text, spoken.audio[first:last])


TALK_OVER_OFFSET_S = {PointKind.BARGE_IN: 0.9, PointKind.BACKCHANNEL: 0.7}
"""Where each talk-over point's clip came after the start of the reply it was spoken over."""


def write_talk_over_points(workdir: Path, conversation: str = "conv-2") -> list[Point]:
    """Write a barge-in point and a backchannel point of one conversation, as ``pmc points`` does.

    Speaker A is the user, B the system. The turn ends where its audio ends; B's reply starts
    0.4 s later; A's clip came :data:`TALK_OVER_OFFSET_S` into it. The reply and the clip start
    at their speech's onset, so their labels' times are where scoring finds them. At the
    barge-in B's reply is cut about 0.35 s after A came in (B gave up the floor:
    ``person_yield_s``, to where the cut speech ends);
    at the backchannel it runs to its end (``person_kept_talking_s``).
    """
    at = _Conversation.at(workdir, conversation)
    cases = (
        (PointKind.BARGE_IN, "Biscuit ran straight into the sea.", "Wait, which beach was it?"),
        (PointKind.BACKCHANNEL, "We are going back there in June.", "Mm-hmm."),
    )
    reply = _trimmed(speak("Ha, spaniels love the water, ours swims every day.", 1.4))
    points = []
    for i, (kind, said, over) in enumerate(cases):
        turn, clip = speak(said), _trimmed(speak(over))
        end_s = len(turn.audio) / SAMPLE_RATE
        offset = TALK_OVER_OFFSET_S[kind]
        heard = reply
        if kind is PointKind.BARGE_IN:
            cut = Spoken(reply.text, reply.audio[: round((offset + 0.35) * SAMPLE_RATE)])
            heard = Spoken(reply.text, _trimmed(cut).audio)  # to where the cut speech ends
        kept = round(len(heard.audio) / SAMPLE_RATE - offset, 6)
        barge_in = kind is PointKind.BARGE_IN
        start = 100.0 + 20.0 * i
        points.append(
            at.point(
                kind,
                start,
                turn.audio,
                end_s,
                end_s,
                heard,
                end_s + 0.4,
                clip,
                extra=f"A|{start + end_s:.3f}",
                inject_offset_s=offset,
                inject_text=clip.text,
                person_yield_s=kept if barge_in else None,
                person_talk_over_s=kept if barge_in else None,
                person_kept_talking_s=None if barge_in else kept,
            )
        )
    return at.write(points)
