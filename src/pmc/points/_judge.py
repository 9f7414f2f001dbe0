"""The optional LLM judge of curation (paper section 3.3): reject bad windows, rank the rest.

It reads a transcript window around each survivor of the filters and the cap. For a pause it
rejects incoherent windows, pauses that hand the turn to the listener and interrupted fragments,
and scores how tempting the pause is; for a turn end it rejects incoherent windows, interrupted
fragments and unresponsive replies, and scores how hard the turn end is. A score of zero is
never selected. Verdicts are cached by (point id, model, prompt version).
"""

from __future__ import annotations

from pmc.labels import Label, LabelKind, Labels
from pmc.llm import JudgeCache, LlmClient, LlmError, LlmRequest, cached_complete
from pmc.points._candidates import Candidate
from pmc.points._types import JudgeVerdict, PointKind

PROMPT_VERSION = "curation-1"
"""Bump whenever a prompt below changes: cached verdicts are keyed by it."""
WINDOW_BEFORE_S = 30.0
WINDOW_AFTER_S = 15.0
"""The transcript window around the boundary (ours: enough for a few turns each side)."""

SYSTEM = (
    "You help curate a benchmark of spoken dialogue systems from transcripts of real, casual "
    "two-person conversations. Answer with one JSON object: "
    '{"accept": true or false, "score": a number from 0 to 1, "reason": "one short sentence"}.'
)
PAUSE_TASK = (
    "The marker [PAUSE] shows where speaker {user} stopped for {length:.1f} s and then went on "
    "with the same turn. Reject (accept false) if the window is incoherent, if the pause in "
    "fact hands the turn to the listener, or if the speech around it is an interrupted "
    "fragment. Otherwise score how tempting the pause is for a listener who wants to reply: "
    "0 = obviously unfinished, 1 = sounds complete."
)
TURN_END_TASK = (
    "The marker [TURN END] shows where speaker {user} finished a turn and speaker {other} "
    "replied. Reject (accept false) if the window is incoherent, if the turn is an interrupted "
    "fragment, or if the reply does not respond to it. Otherwise score how hard it is to reply "
    "well there: 0 = trivial, 1 = demanding."
)


def transcript_window(labels: Labels, candidate: Candidate) -> str:
    """Turns around the boundary, one per line, with the boundary marked."""
    lo = candidate.boundary_conv_s - WINDOW_BEFORE_S
    hi = candidate.boundary_conv_s + WINDOW_AFTER_S
    turns = [t for t in labels.of(LabelKind.TURN) if t.end_conv_s > lo and t.start_conv_s < hi]
    lines = []
    for turn in turns:
        if turn.start_conv_s == candidate.turn.start_conv_s and turn.speaker is candidate.user:
            lines.append(_marked(turn, candidate))
        elif turn.text:
            lines.append(f"{_who(turn)}: {turn.text}")
    return "\n".join(lines)


def _who(turn: Label) -> str:
    return f"Speaker {turn.speaker.value if turn.speaker else '?'}"


def _marked(turn: Label, candidate: Candidate) -> str:
    """The active turn with its words split at the boundary by a marker."""
    words = turn.text.split()
    before = len(candidate.words_before)
    marker = "[PAUSE]" if candidate.kind is PointKind.PAUSE else "[TURN END]"
    return f"{_who(turn)}: {' '.join([*words[:before], marker, *words[before:]])}"


def judge(
    point_id: str,
    candidate: Candidate,
    labels: Labels,
    client: LlmClient,
    cache: JudgeCache,
) -> JudgeVerdict:
    """Ask the judge about one survivor (or reuse its cached verdict)."""
    length = candidate.boundary_end_conv_s - candidate.boundary_conv_s
    task = PAUSE_TASK if candidate.kind is PointKind.PAUSE else TURN_END_TASK
    user = (
        task.format(user=candidate.user.value, other=candidate.user.other.value, length=length)
        + "\n\nTranscript:\n"
        + transcript_window(labels, candidate)
    )
    answer = cached_complete(client, cache, point_id, PROMPT_VERSION, LlmRequest(SYSTEM, user))
    try:
        accept = bool(answer.data["accept"])
        score = min(max(float(answer.data["score"]), 0.0), 1.0)
    except (KeyError, TypeError, ValueError):
        raise LlmError(client.name, f"judge answer for {point_id} lacks accept/score") from None
    return JudgeVerdict(
        client.name, PROMPT_VERSION, accept, score, str(answer.data.get("reason", "")), answer.raw
    )


def selectable(verdict: JudgeVerdict) -> bool:
    """Accepted with a score above zero: a score of zero is never selected (section 3.3)."""
    return verdict.accept and verdict.score > 0.0
