"""Running the points stage: labels in, ``points/manifest.jsonl``, ``funnel.json`` and cuts out.

Two passes over the corpus: the first filters, ranks, caps and draws (keeping no audio); the
second reads only the conversations with drawn points and writes their cuts.
"""

from __future__ import annotations

import functools
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from pmc import audio, io
from pmc.corpus import Channel, Conversation, conversation_paths, read_conversation
from pmc.gate import GateParams
from pmc.labels import SELECTION_FILE, LabelKind, Labels, Selection, labels_dir, read_labels
from pmc.llm import JudgeCache, LlmClient
from pmc.points._candidates import (
    Candidate,
    pause_candidates,
    talk_over_candidates,
    turn_end_candidates,
)
from pmc.points._curate import (
    cap_per_conversation,
    features,
    heuristic_score,
    passes_audio_filters,
    seeded_draw,
)
from pmc.points._cuts import (
    cut,
    history_messages,
    history_range,
    history_start,
    to_sample,
    write_wav,
)
from pmc.points._files import (
    FUNNEL_FILE,
    MANIFEST_FILE,
    WINDOWS_FILE,
    points_dir,
)
from pmc.points._funnel import DEFAULT_DRAW, Funnel
from pmc.points._judge import PROMPT_VERSION as JUDGE_PROMPT_VERSION
from pmc.points._judge import judge as judge_candidate
from pmc.points._judge import selectable
from pmc.points._llm_text import extract_fact, written_identity_prompt
from pmc.points._measure import talk_over_fields
from pmc.points._prompts import identity_prompt
from pmc.points._recall import (
    ASKER,
    RecallFact,
    control_fact,
    conversation_fact,
    prefix_ends,
    read_facts,
)
from pmc.points._types import JudgeVerdict, Point, PointKind, point_id
from pmc.points._windows import review_cut, window_of
from pmc.progress import Start
from pmc.review import Window
from pmc.tts import TextToSpeech, VoiceHint, create_tts

JUDGE_CACHE_FILE = "judge_cache.jsonl"


@dataclass(frozen=True)
class _Draft:
    """A point before its cuts: a filtered, ranked candidate, or a recall question."""

    point_id: str
    kind: PointKind
    conversation_id: str
    candidate: Candidate | None = None
    recall: RecallFact | None = None
    prefix_s: float | None = None
    history_end_conv_s: float | None = None
    features: dict[str, float] = field(default_factory=dict)
    score: float = 0.0
    verdict: JudgeVerdict | None = None


def _selected(workdir: Path) -> set[str] | None:
    path = labels_dir(workdir) / SELECTION_FILE
    return set(Selection.from_dict(io.read_json(path)).selected_ids) if path.exists() else None


def _conversations(workdir: Path) -> list[tuple[Path, Path]]:
    """(corpus file, labels file) of every labelled, selected conversation."""
    chosen = _selected(workdir)
    pairs = []
    for path in conversation_paths(workdir):
        labels = labels_dir(workdir) / path.name
        if labels.exists() and (chosen is None or path.stem in chosen):
            pairs.append((path, labels))
    return pairs


def _tracks(conversation: Conversation) -> dict[object, audio.FloatArray]:
    return {s.channel: audio.read(s.audio) for s in conversation.speakers}


def _drafts(
    conversation: Conversation,
    labels: Labels,
    facts: dict[str, dict[str, Any]],
    funnel: Funnel,
    judge: CurationJudge | None,
) -> list[_Draft]:
    """Gate, rank and cap one conversation's boundaries; add its recall questions."""
    cid = conversation.conversation_id
    tracks = _tracks(conversation)
    gate = GateParams()
    survivors: list[_Draft] = []
    groups = {
        PointKind.PAUSE: pause_candidates(conversation, labels),
        PointKind.TURN_END: turn_end_candidates(conversation, labels),
        **talk_over_candidates(conversation, labels),
    }
    for kind, (total, found) in groups.items():
        funnel.candidates[kind.value] += total
        funnel.label_filters[kind.value] += len(found)
        for c in found:
            if passes_audio_filters(c, tracks, gate):
                values = features(c)
                # Talk over one reply may come more than once: its onset tells them apart.
                extra = (
                    c.user.value if c.over is None else f"{c.user.value}|{c.over.start_conv_s:.3f}"
                )
                pid = point_id(cid, kind, c.boundary_conv_s, extra)
                survivors.append(
                    _Draft(pid, kind, cid, c, features=values, score=heuristic_score(kind, values))
                )
                funnel.audio_filters[kind.value] += 1
    kept = cap_per_conversation([(d.point_id, d.kind.value, d.score) for d in survivors])
    drafts = [d for d in survivors if d.point_id in kept]
    for d in drafts:
        funnel.capped[d.kind.value] += 1
    if judge is not None:
        drafts = [
            replace(d, verdict=verdict)
            for d in drafts
            if d.candidate is not None
            and selectable(verdict := judge.verdict(d.point_id, d.candidate, labels))
        ]
    for d in drafts:
        funnel.judged[d.kind.value] += 1
    for recall_kind, fact in _recall_facts(cid, facts, labels, judge):
        for prefix, end in prefix_ends(labels, after_s=fact.fact_end_conv_s):
            pid = point_id(cid, recall_kind, end, f"{prefix:g}")
            drafts.append(
                _Draft(pid, recall_kind, cid, recall=fact, prefix_s=prefix, history_end_conv_s=end)
            )
            funnel.capped[recall_kind.value] += 1
            funnel.judged[recall_kind.value] += 1
    return drafts


@dataclass(frozen=True)
class CurationJudge:
    """An LLM judge and the cache of its verdicts."""

    client: LlmClient
    cache: JudgeCache

    @property
    def label(self) -> str:
        """Who judged, for the funnel and manifest."""
        return f"{self.client.name} (prompt {JUDGE_PROMPT_VERSION})"

    def verdict(self, pid: str, candidate: Candidate, labels: Labels) -> JudgeVerdict:
        """The (cached) verdict on one survivor."""
        return judge_candidate(pid, candidate, labels, self.client, self.cache)


def _recall_facts(
    cid: str, facts: dict[str, dict[str, Any]], labels: Labels, judge: CurationJudge | None
) -> list[tuple[PointKind, RecallFact]]:
    """The control question, and the conversation fact: stored, or extracted by the LLM."""
    out = [(PointKind.FACT_RECALL, control_fact(cid))]
    if cid in facts:
        out.insert(0, (PointKind.CONVERSATION_RECALL, conversation_fact(facts[cid])))
    elif judge is not None and (fact := extract_fact(labels, judge.client, judge.cache)):
        out.insert(0, (PointKind.CONVERSATION_RECALL, fact))
    return out


def run_points(
    workdir: Path,
    *,
    draw: int = DEFAULT_DRAW,
    seed: int = 0,
    tts: str = "piper",
    judge: LlmClient | None = None,
    require_review: int = 0,
    progress: Start | None = None,
) -> tuple[list[Point], Funnel]:
    """Build the point set of ``workdir`` (reads corpus and labels, writes ``points/``).

    Args:
        workdir: The working directory.
        draw: Points drawn per kind, pause, turn end and fact recall (all when fewer);
            conversation-recall points are all kept (paper section 3.3).
        seed: The draw's seed.
        tts: The text-to-speech backend for spoken questions.
        judge: An LLM judge of the survivors (None keeps the heuristic ranking, and the funnel
            says so); its verdicts are cached in ``points/judge_cache.jsonl``.
        require_review: Keep a pause or turn-end window only when at least this many reviewers
            accept it; a window any reviewer rejects is never kept (``pmc review``).
        progress: Given a number of steps, returns a function to call after each.
    """
    pairs = _conversations(workdir)
    funnel = Funnel(conversations=len(pairs), draw=draw, seed=seed, require_review=require_review)
    curation = None
    if judge is not None:
        curation = CurationJudge(judge, JudgeCache(points_dir(workdir) / JUDGE_CACHE_FILE))
        funnel.judge = curation.label
    facts = read_facts(workdir)
    advance = progress(2 * len(pairs)) if progress else None
    drafts: list[_Draft] = []
    for corpus_path, labels_path in pairs:
        conversation = read_conversation(workdir, corpus_path)
        drafts.extend(_drafts(conversation, read_labels(labels_path), facts, funnel, curation))
        if advance:
            advance()
    windows = {
        d.point_id: window_of(d.point_id, d.kind, d.candidate)
        for d in drafts
        if d.candidate is not None
    }
    drafts = _reviewed(workdir, drafts, windows, funnel)
    chosen: set[str] = set()
    for kind in PointKind:
        ids = [d.point_id for d in drafts if d.kind is kind]
        picked = ids if kind is PointKind.CONVERSATION_RECALL else seeded_draw(ids, draw, seed)
        chosen.update(picked)
        funnel.drawn[kind.value] = len(picked)
    speaker = create_tts(tts)
    out = points_dir(workdir)
    points: list[Point] = []
    for corpus_path, labels_path in pairs:
        mine = [d for d in drafts if d.point_id in chosen and d.conversation_id == corpus_path.stem]
        if mine:
            conversation = read_conversation(workdir, corpus_path)
            labels = read_labels(labels_path)
            tracks = _tracks(conversation)
            cid = conversation.conversation_id
            answers = sorted(
                {d.recall.answer for d in drafts if d.conversation_id == cid and d.recall}
            )
            prompts = {
                c: written_identity_prompt(labels, c, answers, curation.client, curation.cache)
                if curation
                else identity_prompt(c)
                for c in Channel
            }
            points.extend(_finish(d, labels, tracks, speaker, out, prompts) for d in mine)
        if advance:
            advance()
    points.sort(key=lambda p: (p.kind.value, p.conversation_id, p.boundary_conv_s, p.point_id))
    listed = [replace(w, drawn=w.window_id in chosen) for w in windows.values()]
    _write(out, points, funnel, sorted(listed, key=lambda w: w.window_id))
    return points, funnel


def _reviewed(
    workdir: Path, drafts: list[_Draft], windows: dict[str, Window], funnel: Funnel
) -> list[_Draft]:
    """The drafts a review leaves (:func:`review_cut`), counted in the funnel."""
    cut = review_cut(workdir, windows.values(), funnel.require_review)
    funnel.review_problems = cut.problems
    kept = []
    for d in drafts:
        if d.point_id in cut.rejected:
            funnel.rejected[d.kind.value] += 1
        elif d.point_id not in cut.unaccepted:
            funnel.reviewed[d.kind.value] += 1
            kept.append(d)
    return kept


def _finish(
    draft: _Draft,
    labels: Labels,
    tracks: dict[object, audio.FloatArray],
    speaker: TextToSpeech,
    out: Path,
    prompts: dict[Channel, str],
) -> Point:
    """Cut a drafted point's audio and text and make it a :class:`Point`."""
    folder = out / "audio" / draft.point_id
    turns = labels.of(LabelKind.TURN)
    c = draft.candidate
    if c is not None:
        user, system = c.user, c.user.other
        stream_start = to_sample(c.turn.start_conv_s)
        stream_end = to_sample(c.stream_end_conv_s)
        live = cut(tracks[user], stream_start, stream_end)
        boundary, boundary_end = c.boundary_conv_s, c.boundary_end_conv_s
    else:
        fact = draft.recall
        if fact is None or draft.history_end_conv_s is None:
            raise ValueError(f"{draft.point_id}: a recall draft without its question")
        user, system = ASKER, ASKER.other
        stream_start = stream_end = to_sample(draft.history_end_conv_s)
        question = _spoken(speaker, fact.question, fact.voice_pitch)
        live = cut(question, 0, len(question))
        boundary = boundary_end = stream_start / audio.SAMPLE_RATE
    origin = stream_start / audio.SAMPLE_RATE
    first, last = history_range(history_start(turns, origin), stream_start)
    cuts = {
        "history_user": write_wav(folder, "history_user.wav", cut(tracks[user], first, last)),
        "history_system": write_wav(folder, "history_system.wav", cut(tracks[system], first, last)),
        "live": write_wav(folder, "live.wav", live),
    }
    if c is None:
        cuts["question"] = cuts["live"]  # for recall, the live stream is the spoken question
    messages = history_messages(turns, first / audio.SAMPLE_RATE, origin, system)
    io.write_json(folder / "history.json", {"messages": messages})
    cuts["history_text"] = "history.json"
    reply_start = reply_end = None
    reply_text = ""
    reply = np.zeros(0, np.float32)
    if c is not None and c.reply is not None:
        reply_start, reply_end, reply_text = c.reply.start_conv_s, c.reply.end_conv_s, c.reply.text
        reply = cut(tracks[system], to_sample(reply_start), to_sample(reply_end))
        cuts["reply"] = write_wav(folder, "reply.wav", reply)
    over = c.over if c is not None else None
    talk_over: dict[str, Any] = {}
    if c is not None and over is not None and c.clip_end_conv_s is not None:
        clip = cut(tracks[user], to_sample(over.start_conv_s), to_sample(c.clip_end_conv_s))
        cuts["inject"] = write_wav(folder, "inject.wav", clip)
        talk_over = talk_over_fields(over, reply, stream_start, c, len(clip))
    question_end = len(live) / audio.SAMPLE_RATE if c is None else None
    fact = draft.recall
    return Point(
        point_id=draft.point_id,
        kind=draft.kind,
        conversation_id=draft.conversation_id,
        user=user,
        system=system,
        history_start_conv_s=first / audio.SAMPLE_RATE,
        stream_start_conv_s=origin,
        boundary_conv_s=boundary,
        boundary_stream_s=question_end if question_end is not None else boundary - origin,
        boundary_end_conv_s=boundary_end,
        boundary_end_stream_s=question_end if question_end is not None else boundary_end - origin,
        stream_end_conv_s=stream_end / audio.SAMPLE_RATE,
        reply_start_conv_s=reply_start,
        reply_end_conv_s=reply_end,
        reply_text=reply_text if fact is None else fact.answer,
        question=fact.question if fact else "",
        gold_answer=fact.answer if fact else "",
        prefix_s=draft.prefix_s,
        features=draft.features,
        heuristic_score=draft.score,
        judge=draft.verdict,
        identity_prompt=prompts[system],
        cuts={k: f"audio/{draft.point_id}/{v}" for k, v in cuts.items()},
        **talk_over,
    )


@functools.cache
def _spoken_cached(speaker: TextToSpeech, text: str, pitch: float) -> bytes:
    return speaker.speak(text, VoiceHint(pitch=pitch)).tobytes()


def _spoken(speaker: TextToSpeech, text: str, pitch: float) -> audio.FloatArray:
    """A question spoken once per run, however many history lengths ask it."""
    return np.frombuffer(_spoken_cached(speaker, text, pitch), dtype=np.float32)


def _write(out: Path, points: list[Point], funnel: Funnel, windows: list[Window]) -> None:
    """Write the manifest, windows and funnel; remove cut folders of points no longer in the set."""
    keep = {p.point_id for p in points}
    if (out / "audio").is_dir():
        for folder in (out / "audio").iterdir():
            if folder.name not in keep:
                shutil.rmtree(folder)
    with io.atomic_open(out / MANIFEST_FILE) as handle:
        for p in points:
            handle.write(io.json_line(p.to_dict()))
    with io.atomic_open(out / WINDOWS_FILE) as handle:
        for w in windows:
            handle.write(io.json_line(w.to_dict()))
    io.write_json(out / FUNNEL_FILE, funnel.to_dict())
