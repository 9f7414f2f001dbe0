"""Audio filters, the heuristic ranking, the per-conversation cap, the seeded draw (appendix A)."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence

from pmc.audio import SAMPLE_RATE, FloatArray
from pmc.gate import GateParams, speech_ratio
from pmc.points._candidates import Candidate
from pmc.points._types import PointKind

SILENCE_MAX_RATIO = 0.25
"""The pause window gates as silence: speech ratio at most 0.25 (appendix A)."""
SPEECH_MIN_RATIO = 0.2
"""The 3 s before the boundary, and the reply, gate as speech: at least 0.2 (appendix A)."""
BEFORE_BOUNDARY_S = 3.0
"""How much of the turn before the boundary must gate as speech (appendix A)."""
CAP_PER_KIND = 3
"""At most three points per kind per conversation (paper section 3.3)."""

NOT_AMBIGUOUS = frozenset(
    """and but or so because nor yet if then when while although though
    a an the this that these those my your his her our their
    of to in on at for with from by about into onto over under after before through like as
    um uh er erm ah mm hmm like""".split()
)
"""Conjunctions, articles, prepositions and fillers: a pause after one of them obviously goes
on, so it does not tempt a system (appendix A's ambiguity bit)."""

# The weights and caps of the ranking are ours: the paper names the features (appendix A) but
# not their weights. Longer pauses and more turn context make a pause more tempting; an
# ambiguous last word matters as much as a full second of extra pause.
PAUSE_LENGTH_CAP_S = 2.0
TURN_CONTEXT_CAP_S = 10.0
WORDS_CAP = 30
PAUSE_WEIGHTS = {"pause_length": 0.4, "turn_context": 0.2, "ambiguity": 0.4}
TURN_END_WEIGHTS = {"turn_context": 0.4, "turn_words": 0.3, "reply_words": 0.3}


def features(candidate: Candidate) -> dict[str, float]:
    """The capped features of a candidate, each in 0 to 1."""
    turn = candidate.turn
    context = min(candidate.boundary_conv_s - turn.start_conv_s, TURN_CONTEXT_CAP_S)
    if candidate.kind is PointKind.PAUSE:
        last = candidate.words_before[-1].lower().strip(".,?!;:") if candidate.words_before else ""
        length = candidate.boundary_end_conv_s - candidate.boundary_conv_s
        return {
            "pause_length": round(min(length, PAUSE_LENGTH_CAP_S) / PAUSE_LENGTH_CAP_S, 6),
            "turn_context": round(context / TURN_CONTEXT_CAP_S, 6),
            "ambiguity": 0.0 if last in NOT_AMBIGUOUS else 1.0,
        }
    reply_words = candidate.reply.words if candidate.reply else 0
    return {
        "turn_context": round(context / TURN_CONTEXT_CAP_S, 6),
        "turn_words": round(min(turn.words, WORDS_CAP) / WORDS_CAP, 6),
        "reply_words": round(min(reply_words, WORDS_CAP) / WORDS_CAP, 6),
    }


def heuristic_score(kind: PointKind, values: dict[str, float]) -> float:
    """The weighted sum of a candidate's capped features."""
    weights = PAUSE_WEIGHTS if kind is PointKind.PAUSE else TURN_END_WEIGHTS
    return round(sum(weights[name] * values[name] for name in weights), 6)


def _ratio(track: FloatArray, start_s: float, end_s: float, gate: GateParams) -> float:
    first, last = max(0, round(start_s * SAMPLE_RATE)), round(end_s * SAMPLE_RATE)
    return speech_ratio(track[first:last], gate) if last > first else 0.0


def passes_audio_filters(
    candidate: Candidate, tracks: dict[object, FloatArray], gate: GateParams
) -> bool:
    """The audio filters: a silent pause; speech before it, in the reply and in a clip."""
    user = tracks[candidate.user]
    before = _ratio(
        user, candidate.boundary_conv_s - BEFORE_BOUNDARY_S, candidate.boundary_conv_s, gate
    )
    if before < SPEECH_MIN_RATIO:
        return False
    if candidate.kind is PointKind.PAUSE:
        window = _ratio(user, candidate.boundary_conv_s, candidate.boundary_end_conv_s, gate)
        return window <= SILENCE_MAX_RATIO
    reply = candidate.reply
    if reply is None:
        return False
    replier = tracks[candidate.user.other]
    if _ratio(replier, reply.start_conv_s, reply.end_conv_s, gate) < SPEECH_MIN_RATIO:
        return False
    over, clip_end = candidate.over, candidate.clip_end_conv_s
    if over is None or clip_end is None:
        return True
    return _ratio(user, over.start_conv_s, clip_end, gate) >= SPEECH_MIN_RATIO


def cap_per_conversation(scored: Sequence[tuple[str, str, float]]) -> set[str]:
    """Keep the best :data:`CAP_PER_KIND` ids per (conversation, kind): ``(id, group, score)``.

    Ties go to the smaller id, so the choice never depends on input order.
    """
    groups: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for item_id, group, score in scored:
        groups[group].append((-score, item_id))
    return {item_id for items in groups.values() for _, item_id in sorted(items)[:CAP_PER_KIND]}


def seeded_draw(ids: Sequence[str], n: int, seed: int) -> list[str]:
    """``n`` of ``ids`` drawn with ``seed`` (all of them when there are fewer), sorted."""
    pool = sorted(ids)
    if len(pool) <= n:
        return pool
    return sorted(random.Random(seed).sample(pool, n))
