"""One rollout's page of the HTML report: what came of it, its timeline, audio, texts and scores.

The page says what the rollout came to, lists its facts (the point, its boundary, when the input
ended, how the input kept time), draws the timeline (:mod:`pmc.report._timeline`) with a legend,
plays the exchange as one stereo file on the timeline's clock (:mod:`pmc.report._listen`: the
person left, the system right) and, under conditions, what the system heard, shows what each
side said and every score, and links the same point's rollouts of the other systems. The index's
rollout lists share its outcome line, kind names and links. Every text that came from a system
or a corpus is escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from urllib.parse import quote

import soundfile as sf

from pmc.conditions import Condition
from pmc.harness import PLAYED_FILE, ProtocolRecord, SystemEntry
from pmc.points import Point, PointKind
from pmc.report._heading import condition_names, under
from pmc.report._listen import HISTORY_TAIL_S
from pmc.report._rollouts import RolloutView
from pmc.report._texts import said, scores_of
from pmc.report._timeline import Spans, Timeline, svg
from pmc.scoring import ClipScore, ScoreStatus
from pmc.table import show

INDEX = "index.html"
KIND_NAMES = {
    PointKind.PAUSE: "pauses",
    PointKind.TURN_END: "turn ends",
    PointKind.CONVERSATION_RECALL: "conversation recall",
    PointKind.FACT_RECALL: "fact recall",
    PointKind.BARGE_IN: "barge-ins",
    PointKind.BACKCHANNEL: "backchannels in a reply",
}
BOUNDARY_NAMES = {
    PointKind.PAUSE: "labelled pause",
    PointKind.TURN_END: "turn end",
    PointKind.CONVERSATION_RECALL: "question end",
    PointKind.FACT_RECALL: "question end",
    PointKind.BARGE_IN: "turn end",
    PointKind.BACKCHANNEL: "turn end",
}


@dataclass(frozen=True)
class Listen:
    """What a rollout's page plays, and what its run's systems heard the person through.

    Attributes:
        stereo: The stereo file, relative to the report folder (None: nothing to hear).
        heard: What the system heard, copied beside it (None: the rollout kept none).
        conditions: The run's conditions, named in the page's heading and the heard player's.
    """

    stereo: str | None
    heard: str | None = None
    conditions: Sequence[Condition] = ()


def href(prefix: str, rel: str) -> str:
    """A relative link, quoted for the URL and escaped for the attribute."""
    return escape(prefix + quote(rel))


def system_anchor(system: str) -> str:
    """The id of a system's rollouts on the index."""
    return escape(f"system-{system}")


def outcome(r: RolloutView) -> tuple[str, str]:
    """One line on what the rollout came to, and its CSS class."""
    if r.error is not None:
        return "failed: " + str((r.error.get("attempts") or ["transport error"])[-1]), "failed"
    late = " · input ran late" if r.trace and r.trace.audit.get("late") else ""
    s = r.score
    if s is None:
        protocol = _protocol(r)
        stop = protocol.stop_reason if protocol else None
        return f"not scored · stopped: {stop or '-'}{late}", "muted"
    if s.status is not ScoreStatus.SCORED:
        return s.status.value.replace("_", " ") + late, "muted"
    if s.pause is not None:
        p = s.pause
        text = p.outcome.value
        if p.latency_s is not None:
            text += f", latency {p.latency_s:.2f} s"
        if p.after_latency_s is not None:
            text += f", {p.after_latency_s:.2f} s after the pause"
        return text + late, "outcome"
    if s.reply is not None:
        y = s.reply
        if y.latency_s is None:
            return "no words" + late, "outcome"
        return (
            f"reply latency {y.latency_s:.2f} s, {y.words} words, token F1 {show(y.token_f1)}, "
            f"cosine {show(y.cosine)}{late}",
            "outcome",
        )
    if s.recall is not None:
        verdicts = [f"strict: {'correct' if s.recall.strict.correct else 'wrong'}"]
        verdicts += [f"{j.model}: {'correct' if j.correct else 'wrong'}" for j in s.recall.judges]
        return ", ".join(verdicts) + late, "outcome"
    return "scored" + late, "outcome"


def rollout_body(
    r: RolloutView,
    entry: SystemEntry | None,
    listen: Listen,
    speech: tuple[Spans, Spans],
    same_point: list[RolloutView],
) -> str:
    """A rollout's page body.

    Args:
        r: The rollout.
        entry: Its system's entry in the run's record (None: the record has none).
        listen: Its audio files, and its run's conditions.
        speech: The person's speech intervals on the stream clock, and the system seat's in
            the history's tail.
        same_point: The point's rollouts of every system.
    """
    up = "../../"
    kind_name = KIND_NAMES[r.kind] if r.kind else "unknown kind"
    text, css = outcome(r)
    timeline = _timeline(r, *speech)
    parts = [
        f'<p><a href="{up}{INDEX}#{system_anchor(r.system)}">← report</a></p>',
        f"<h1>{escape(r.system)} · {escape(kind_name)} · {escape(r.point_id)} · rollout {r.k}"
        f"{escape(under(listen.conditions))}</h1>",
        f'<p class="{css}">{escape(text)}</p>',
        _facts(r, entry, timeline),
        "<h2>Timeline</h2>",
        svg(timeline),
        _LEGEND,
        "<h2>Audio</h2>",
        *_player(r, listen.stereo, timeline, up),
        *_heard(listen, up),
    ]
    parts += said(r)
    parts += scores_of(r)
    if r.error is not None:
        attempts = "".join(f"<li>{escape(str(a))}</li>" for a in r.error.get("attempts", []))
        parts += ["<h2>Failure</h2>", f"<ul>{attempts}</ul>"]
    others = [o for o in same_point if o.system != r.system]
    if others:
        links = "".join(
            f'<li><a href="{href(up, o.page)}">{escape(o.system)}</a>: {escape(outcome(o)[0])}</li>'
            for o in others
        )
        parts += ["<h2>Same point, other systems</h2>", f"<ul>{links}</ul>"]
    return "\n".join(parts)


def _player(r: RolloutView, stereo: str | None, t: Timeline, up: str) -> list[str]:
    """One stereo player, and what its channels and clock are."""
    if stereo is None:
        return ['<p class="muted">No audio.</p>']
    played = "the system as played" if r.trace is not None else "silence (nothing was played)"
    end = f"{t.stop_s:.2f} s" if t.stop_s is not None else "the end of the live input"
    tail = f"{HISTORY_TAIL_S:g} s"
    return [
        f'<p class="channels">Left: the person (the history\'s last {tail}, then the live '
        f"input as streamed). Right: the system's seat (the history's last {tail} from that "
        f"side, then from t = 0 {played}). On the timeline's clock: the file starts at "
        f"−{tail}; t = 0 is the first live sample, where the history ends; it ends at {end}.</p>",
        f'<audio class="stereo" controls preload="metadata" src="{href(up, stereo)}"></audio>',
    ]


def _heard(listen: Listen, up: str) -> list[str]:
    """A player of what the system heard, where the rollout kept it (runs under conditions)."""
    if listen.heard is None:
        return []
    label = "What the system heard"
    if listen.conditions:
        label += f" (under {condition_names(listen.conditions)})"
    return [
        f'<p class="channels">{escape(label)}: its input as sent, frame after frame from the '
        "first live sample, with no history before it (where a network delayed frames, they "
        "follow each other here without the delay).</p>",
        f'<audio class="heard" controls preload="metadata" src="{href(up, listen.heard)}"></audio>',
    ]


_LEGEND = (
    '<p class="legend"><span><span class="sw person"></span>the person\'s speech (gate)</span>'
    '<span><span class="sw seat"></span>the system\'s seat in the history</span>'
    '<span><span class="sw speech"></span>system speech with words</span>'
    '<span><span class="sw wordless"></span>wordless phonation</span>'
    '<span><span class="sw pause"></span>labelled pause</span>'
    '<span><span class="sw human"></span>the human reply the system is scored against</span>'
    '<span><span class="sw boundary"></span>turn or question end</span>'
    '<span><span class="sw talk-over"></span>the system talks over the person</span>'
    '<span><span class="sw clip"></span>the person\'s clip played over the reply</span></p>'
)


def _facts(r: RolloutView, entry: SystemEntry | None, t: Timeline) -> str:
    protocol = _protocol(r)
    description = entry.card.description if entry is not None else ""
    facts: list[tuple[str, str]] = [
        ("system", f"{r.system}: {description}"),
        ("point", f"{r.point_id} (rollout {r.k})"),
    ]
    if r.point is not None:
        facts.append(("conversation", r.point.conversation_id))
        if r.point.prefix_s is not None:
            facts.append(("history", f"{r.point.prefix_s:g} s"))
    span = f"{t.boundary_s:.2f}–{t.boundary_end_s:.2f} s" if t.pause else f"{t.boundary_s:.2f} s"
    facts.append((t.boundary_label, span))
    facts.append(("live input", f"{t.live_s:.2f} s"))
    if t.stop_s is not None:
        stop_reason = protocol.stop_reason if protocol else None
        facts.append(("stopped", f"{t.stop_s:.2f} s ({stop_reason or '-'})"))
    if r.trace is not None:
        audit = r.trace.audit
        late = "late" if audit.get("late") else "on time"
        facts.append(("input timing", f"{late}, worst {audit.get('lateness_max_ms', 0):.1f} ms"))
        if protocol and protocol.reference_point_id:
            facts.append(("reference reply from", protocol.reference_point_id))
    if r.score is not None:
        facts.append(("scored with", r.score.settings.asr))
        if r.score.talk_over is not None:
            over = r.score.talk_over
            facts.append(
                (
                    "talked over the person",
                    f"{over.duration_s:.2f} s, from {over.onset_s:.2f} s "
                    f"({over.stretches} stretch{'es' if over.stretches > 1 else ''} of talk)",
                )
            )
        clip = r.score.clip
        if clip is not None:
            facts.append(("when the person came in", _clip_fact(clip)))
        resumption = r.score.pause.resumption if r.score.pause else None
        if resumption is not None:
            stop = resumption.stop_latency_s
            stopped = "talked on to the end" if stop is None else f"stopped {stop:.2f} s after"
            verdict = "yielded" if resumption.yielded else "did not yield"
            facts.append(("when the person resumed", f"{verdict}: {stopped}"))
    rows = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in facts)
    return f'<dl class="facts">{rows}</dl>'


def _clip_fact(clip: ClipScore) -> str:
    """What the system did when the person's clip came over its reply, and what the person did."""
    if not clip.reached:
        return "never: the system did not reply, so the clip was not played"
    if not clip.talking:
        return f"at {clip.onset_s:.2f} s, after the system's reply was over"
    stop = clip.stop_latency_s
    stopped = "talked on to the end" if stop is None else f"stopped {stop:.2f} s after"
    verdict = "yielded" if clip.yielded else "did not yield"
    person = "" if clip.person_s is None else f"; the person stopped {clip.person_s:.2f} s after"
    return f"at {clip.onset_s:.2f} s; {verdict}: {stopped}{person}"


def _protocol(r: RolloutView) -> ProtocolRecord | None:
    return r.trace.protocol if r.trace else None


def _timeline(r: RolloutView, person_speech: Spans, seat_speech: Spans) -> Timeline:
    protocol, p = _protocol(r), r.point
    stop: float | None = None
    if protocol is not None:
        live, boundary = protocol.live_s, protocol.boundary_stream_s
        boundary_end, stop = protocol.boundary_end_stream_s, protocol.stop_stream_s
    else:  # a trace that recorded no protocol: the point says where its boundaries are
        live = p.stream_end_conv_s - p.stream_start_conv_s if p else 0.0
        boundary = p.boundary_stream_s if p else 0.0
        boundary_end = p.boundary_end_stream_s if p else boundary
    if stop is None and (r.folder / PLAYED_FILE).exists():
        stop = sf.info(str(r.folder / PLAYED_FILE)).duration  # reads the header only
    return Timeline(
        live_s=float(live),
        boundary_s=float(boundary),
        boundary_end_s=float(boundary_end),
        boundary_label=BOUNDARY_NAMES[r.kind] if r.kind else "boundary",
        pause=r.kind is PointKind.PAUSE,
        stop_s=None if stop is None else float(stop),
        stop_label=str(protocol.stop_reason or "") if protocol else "",
        end_of_input_s=protocol.end_of_input_stream_s if protocol else None,
        speech=r.score.evidence if r.score else (),
        human_reply=_human_reply(p),
        person_speech=person_speech,
        seat_speech=seat_speech,
        start_s=-HISTORY_TAIL_S,
        talk_over=r.score.talk_over.spans if r.score and r.score.talk_over else (),
        clip=_clip(protocol),
    )


def _clip(protocol: ProtocolRecord | None) -> tuple[float, float] | None:
    """Where the person's clip played (talk-over points)."""
    if protocol is None or protocol.clip_stream_s is None or protocol.clip_s is None:
        return None
    return protocol.clip_stream_s, protocol.clip_stream_s + protocol.clip_s


def _human_reply(p: Point | None) -> tuple[float, float] | None:
    """The person's reply on the stream clock (turn ends with a labelled reply)."""
    if p is None or p.reply_start_conv_s is None or p.reply_end_conv_s is None:
        return None
    return p.reply_start_conv_s - p.stream_start_conv_s, p.reply_end_conv_s - p.stream_start_conv_s
