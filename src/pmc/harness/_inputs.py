"""A rollout's inputs, read from the points stage's files: live audio, history, reference reply.

Everything is read before the rollout starts, so the streaming loop touches no disk.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pmc import audio, io
from pmc.audio import FloatArray
from pmc.corpus import corpus_dir, read_conversation
from pmc.errors import InputError, Problem
from pmc.points import Point, PointKind
from pmc.systems import HistoryWord, Preload, ReferenceReply, SystemCard

RECALL_LATENCY_MS = 500
"""When the person answers a recall question, from the question's end, unless the card says
otherwise. The corpus has no recorded answer to time it by; half a second is a typical
conversational gap (paper section 5 gives human turn-end gaps of this order)."""


RECALL_ANSWER = "The answer is {answer}."
"""How the person states a gold answer: as a sentence, because a lone word ("Pepper") is often
lost by the recogniser, and the ceiling is what a perfect answer scores through transcription."""


def rollout_seed(seed: int, system: str, point_id: str, rollout: int) -> int:
    """A seed per rollout from the run's seed and the rollout's identity (never its position)."""
    key = f"{seed}|{system}|{point_id}|{rollout}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:4], "big")


def _wav(points_dir: Path, point: Point, name: str) -> FloatArray:
    """One of the point's cuts (24 kHz mono PCM16, written by the points stage).

    A history cut may hold no samples: a point at the conversation's first turn has no history.
    """
    try:
        return audio.read(audio.probe(points_dir / point.cuts[name]))
    except InputError as exc:
        if exc.problem is Problem.EMPTY_AUDIO and name.startswith("history_"):
            return np.zeros(0, dtype=np.float32)
        raise


def preload_for(
    points_dir: Path,
    point: Point,
    seed: int,
    endpoints_talk_over: bool = False,
    endpoints_everywhere: bool = False,
) -> Preload:
    """The identity prompt and the history, both as audio and as messages.

    The system endpoints the live turn itself only at pauses (at talk-over points too where
    ``endpoints_talk_over``, at every point where ``endpoints_everywhere``); elsewhere a hosted
    system is told when input ends (:func:`pmc.harness._protocol.hosted_commit`).
    """
    history = io.read_json(points_dir / point.cuts["history_text"])
    return Preload(
        identity_prompt=point.identity_prompt,
        user_audio=_wav(points_dir, point, "history_user"),
        system_audio=_wav(points_dir, point, "history_system"),
        messages=list(history["messages"]),
        seed=seed,
        endpointing=endpoints_everywhere
        or point.kind is PointKind.PAUSE
        or (point.kind.talks_over and endpoints_talk_over),
        system_words=system_words(points_dir, point, history["messages"]),
        history_start_conv_s=point.history_start_conv_s,
    )


def system_words(
    points_dir: Path, point: Point, messages: Sequence[dict[str, Any]]
) -> tuple[HistoryWord, ...]:
    """The system's words in the history, on the history's clock, for teacher forcing.

    Taken from the corpus stage's conversation (``WORKDIR/corpus/<id>.json``, beside
    ``points/``) when it is there; otherwise each of the system's history turns is spread
    evenly over its words, by their length in characters.
    """
    origin, end = point.history_start_conv_s, point.stream_start_conv_s
    workdir = points_dir.parent
    path = corpus_dir(workdir) / f"{point.conversation_id}.json"
    if path.exists():
        for speaker in read_conversation(workdir, path).speakers:
            if speaker.channel is point.system:
                return tuple(
                    HistoryWord(w.text, w.start_conv_s - origin, w.end_conv_s - origin)
                    for w in speaker.words
                    if w.start_conv_s >= origin and w.end_conv_s <= end
                )
    words: list[HistoryWord] = []
    for message in messages:
        texts = str(message["text"]).split()
        if message["role"] != "assistant" or not texts or "start_conv_s" not in message:
            continue  # not the system's, or a turn without times: nothing to place
        start, stop = float(message["start_conv_s"]), float(message["end_conv_s"])
        per_char = (stop - start) / sum(len(t) for t in texts)
        at = start - origin
        for text in texts:
            words.append(HistoryWord(text, at, at + len(text) * per_char))
            at += len(text) * per_char
    return tuple(words)


def live_for(points_dir: Path, point: Point) -> FloatArray:
    """The live stream of a point."""
    return _wav(points_dir, point, "live")


def clip_for(points_dir: Path, point: Point) -> FloatArray | None:
    """The person's talk over the reply at a talk-over point (None at other points)."""
    return _wav(points_dir, point, "inject") if "inject" in point.cuts else None


def _pick(point: Point, others: Sequence[Point]) -> Point | None:
    """One of ``others``, chosen from the point's id so every run picks the same one."""
    if not others:
        return None
    ordered = sorted(others, key=lambda p: p.point_id)
    index = int(hashlib.sha256(point.point_id.encode()).hexdigest(), 16) % len(ordered)
    return ordered[index]


def _recall_latency_s(card: SystemCard) -> float:
    latency_ms = card.recall_latency_ms
    return float(RECALL_LATENCY_MS if latency_ms is None else latency_ms) / 1000


def reference_for(
    card: SystemCard, point: Point, points: Sequence[Point], points_dir: Path
) -> ReferenceReply | None:
    """The reply a reference system replays at ``point`` (docs/architecture.md "Systems").

    The person (``reference = "own"``) replays its own reply at its real time (at a talk-over
    point it ends where the person gave up the floor or finished); the shuffled person
    (``"shuffled"``) another reply of a point of the same kind from the same conversation at
    that same time (another conversation's only where the conversation has a single one). At
    recall points the gold answer is spoken in a short sentence (the shuffled person answers a
    different question of the conversation); at pauses both hold, as the person did.
    """
    mode = card.reference or "own"
    if point.kind is PointKind.PAUSE:
        return None
    if point.kind.replies:
        if point.reply_start_conv_s is None:
            return None
        source = point
        if mode == "shuffled":
            ends = [p for p in points if p.kind is point.kind and p != point]
            same = [p for p in ends if p.conversation_id == point.conversation_id]
            picked = _pick(point, same or ends)
            if picked is None:
                return None
            source = picked
        return ReferenceReply(
            start_stream_s=point.reply_start_conv_s - point.stream_start_conv_s,
            text=source.reply_text,
            audio=_wav(points_dir, source, "reply"),
            source_point_id=source.point_id,
        )
    source = point
    if mode == "shuffled":
        recall = [p for p in points if p.gold_answer and p.gold_answer != point.gold_answer]
        same = [p for p in recall if p.conversation_id == point.conversation_id]
        picked = _pick(point, same or recall)
        if picked is None:
            return None
        source = picked
    return ReferenceReply(
        start_stream_s=point.boundary_stream_s + _recall_latency_s(card),
        text=RECALL_ANSWER.format(answer=source.gold_answer),
        source_point_id=source.point_id,
    )
