"""Score one rollout from its own files: the played track, its trace, and the point.

Everything a score needs is in the rollout's folder and the points manifest, so anyone can
recompute it at any time; nothing here reads the harness's state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from pmc.asr import Transcriber
from pmc.audio import SAMPLE_RATE
from pmc.gate import speech_intervals
from pmc.harness import ERROR_FILE, TRACE_FILE, ProtocolRecord, StopReason, read_rollout
from pmc.io import read_json
from pmc.points import Point, PointKind
from pmc.scoring._evidence import Evidence, evidence, ungated
from pmc.scoring._metrics import (
    PauseOutcome,
    PauseScore,
    ReplyScore,
    censored_at,
    pause_score,
    reply_score,
    reply_stretches,
)
from pmc.scoring._talkover import clip_score, talk_over, yield_to
from pmc.scoring._text import has_words, strict_recall, token_f1
from pmc.scoring._transcribe import transcribe_track
from pmc.scoring._types import RecallScore, Score, ScoreSettings, ScoreStatus

Similarity = Callable[[str, str], float | None]
"""Embedding cosine between a system's words and the person's."""


def transport_error(
    folder: Path, point: Point, system: str, rollout: int, s: ScoreSettings
) -> Score:
    """The score of a rollout that failed: an outcome beside the scores, never a zero."""
    attempts = read_json(folder / ERROR_FILE).get("attempts", [])
    return Score(
        point.point_id,
        system,
        rollout,
        point.kind,
        point.conversation_id,
        ScoreStatus.TRANSPORT_ERROR,
        s,
        error=str(attempts[-1]) if attempts else "failed",
    )


def score_rollout(
    folder: Path,
    point: Point,
    system: str,
    rollout: int,
    settings: ScoreSettings,
    transcriber: Transcriber,
    similarity: Similarity,
) -> Score:
    """Score the rollout in ``folder`` (which must hold a trace)."""
    if not (folder / TRACE_FILE).exists():
        return transport_error(folder, point, system, rollout, settings)
    trace, track = read_rollout(folder)
    base = Score(
        point.point_id,
        system,
        rollout,
        point.kind,
        point.conversation_id,
        ScoreStatus.SCORED,
        settings,
        late_input=trace.audit.late,
        stop_reason=trace.protocol.stop_reason if trace.protocol else None,
    )
    if not any(o.samples for o in trace.outputs):
        return replace(base, status=ScoreStatus.NO_AUDIO)
    intervals = speech_intervals(track, settings.gate, SAMPLE_RATE, settings.onset)
    words = transcribe_track(track, intervals, transcriber, settings.transcription)
    found = evidence(intervals, words)
    scored = replace(
        base,
        evidence=tuple(found),
        ungated_words=len(ungated(words, found)),
        talk_over=talk_over(found, person_turn(point)),
    )
    if point.kind is PointKind.PAUSE:
        pause: PauseScore = pause_score(found, point.boundary_stream_s, point.boundary_end_stream_s)
        if pause.outcome is PauseOutcome.TAKEOVER:
            track_end = len(track) / SAMPLE_RATE
            resumed = yield_to(found, point.boundary_end_stream_s, track_end)
            pause = replace(pause, resumption=resumed)
        return replace(scored, pause=pause)
    if _untranscribed(found, point.boundary_stream_s):
        scored = replace(scored, status=ScoreStatus.UNTRANSCRIBED)
    if point.kind is PointKind.TURN_END:
        return replace(scored, reply=_reply(found, point, trace.protocol, settings, similarity))
    if point.kind.talks_over:
        protocol = trace.protocol
        barge_in = point.kind is PointKind.BARGE_IN
        clip = clip_score(
            found,
            protocol.clip_stream_s if protocol else None,
            protocol.clip_s if protocol else None,
            track,
            settings.gate,
            point.person_yield_s if barge_in else point.person_kept_talking_s,
        )
        if clip.said_after and point.person_next_text:
            clip = replace(
                clip,
                after_token_f1=round(token_f1(clip.said_after, point.person_next_text), 4),
                after_cosine=similarity(clip.said_after, point.person_next_text),
            )
        reply = _reply(found, point, protocol, settings, similarity)
        return replace(scored, reply=reply, clip=clip)
    said = " ".join(
        w.text for r in reply_stretches(found, point.boundary_stream_s) for w in r.words
    )
    return replace(
        scored, recall=RecallScore(said, strict_recall(said, point.gold_answer, point.kind))
    )


def person_turn(point: Point) -> tuple[tuple[float, float], ...]:
    """The person's live turn on the stream clock, less the pause under test.

    From the stream's start to the boundary (a turn's or question's end, a pause's start), and
    at a pause also from its end to where the resumed speech stops.
    """
    turn = ((0.0, point.boundary_stream_s),)
    if point.kind is not PointKind.PAUSE:
        return turn
    stream_end = point.stream_end_conv_s - point.stream_start_conv_s
    return (*turn, (point.boundary_end_stream_s, stream_end))


def _untranscribed(found: list[Evidence], boundary_s: float) -> bool:
    """Speech after the boundary, and no words in any of it (nor in talk running into it)."""
    after = [e for e in found if e.end_stream_s > boundary_s]
    return bool(after) and not reply_stretches(found, boundary_s)


def _reply(
    found: list[Evidence],
    point: Point,
    protocol: ProtocolRecord | None,
    settings: ScoreSettings,
    similarity: Similarity,
) -> ReplyScore:
    human_duration = None
    if point.reply_start_conv_s is not None and point.reply_end_conv_s is not None:
        human_duration = round(point.reply_end_conv_s - point.reply_start_conv_s, 4)
    censored = (
        protocol is not None
        and protocol.stop_reason is StopReason.CAP
        and censored_at(found, protocol.stop_stream_s, protocol.params.reply_silence_s)
    )
    human_words = sum(has_words(w) for w in point.reply_text.split())
    reply = reply_score(found, point.boundary_stream_s, human_duration, human_words, censored)
    if not reply.words:
        return reply
    return replace(
        reply,
        token_f1=round(token_f1(reply.transcript, point.reply_text), 4),
        cosine=similarity(reply.transcript, point.reply_text),
    )
