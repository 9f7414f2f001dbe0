"""One rollout's page of the HTML report: what came of it, its timeline, audio, texts and scores.

The page says what the rollout came to, lists its facts (the point, its boundary, when the input
ended, how the input kept time), draws the timeline (:mod:`pmc.report._timeline`) with a legend,
plays both sides' audio, shows what each side said and every score, and links the same point's
rollouts of the other systems. The index's rollout lists share its outcome line, kind names and
links. Every text that came from a system or a corpus is escaped.
"""

from __future__ import annotations

from dataclasses import asdict
from html import escape
from typing import Any
from urllib.parse import quote

import soundfile as sf

from pmc.harness import PLAYED_FILE, ProtocolRecord
from pmc.points import Point, PointKind
from pmc.report._rollouts import RolloutView
from pmc.report._timeline import Timeline, svg
from pmc.scoring import ScoreStatus
from pmc.table import Cell, show

INDEX = "index.html"
KIND_NAMES = {
    PointKind.PAUSE: "pauses",
    PointKind.TURN_END: "turn ends",
    PointKind.CONVERSATION_RECALL: "conversation recall",
    PointKind.FACT_RECALL: "fact recall",
}
BOUNDARY_NAMES = {
    PointKind.PAUSE: "labelled pause",
    PointKind.TURN_END: "turn end",
    PointKind.CONVERSATION_RECALL: "question end",
    PointKind.FACT_RECALL: "question end",
}


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
    r: RolloutView, entry: dict[str, Any], audio: dict[str, str], same_point: list[RolloutView]
) -> str:
    """A rollout's page body; ``audio``: its files by role; ``same_point``: the point's rollouts."""
    up = "../../"
    kind_name = KIND_NAMES[r.kind] if r.kind else "unknown kind"
    text, css = outcome(r)
    timeline = _timeline(r)
    parts = [
        f'<p><a href="{up}{INDEX}#{system_anchor(r.system)}">← report</a></p>',
        f"<h1>{escape(r.system)} · {escape(kind_name)} · {escape(r.point_id)} · rollout {r.k}</h1>",
        f'<p class="{css}">{escape(text)}</p>',
        _facts(r, entry, timeline),
        "<h2>Timeline</h2>",
        svg(timeline),
        _LEGEND,
        "<h2>Audio</h2>",
    ]
    for role, label in (("live", "Live input (the person)"), ("played", "The system, as played")):
        if role in audio:
            parts.append(
                f"<p>{label}</p>"
                f'<audio controls preload="metadata" src="{href(up, audio[role])}"></audio>'
            )
        else:
            parts.append(f'<p class="muted">{label}: no audio.</p>')
    parts += _said(r)
    parts += _scores_of(r)
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


_LEGEND = (
    '<p class="legend"><span><span class="sw live"></span>live input</span>'
    '<span><span class="sw speech"></span>system speech with words</span>'
    '<span><span class="sw wordless"></span>wordless phonation</span>'
    '<span><span class="sw pause"></span>labelled pause</span>'
    '<span><span class="sw human"></span>the person\'s own reply</span>'
    '<span><span class="sw boundary"></span>turn or question end</span></p>'
)


def _facts(r: RolloutView, entry: dict[str, Any], t: Timeline) -> str:
    protocol = _protocol(r)
    facts: list[tuple[str, str]] = [
        ("system", f"{r.system}: {entry.get('card', {}).get('description', '')}"),
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
    rows = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in facts)
    return f'<dl class="facts">{rows}</dl>'


def _protocol(r: RolloutView) -> ProtocolRecord | None:
    return r.trace.protocol if r.trace else None


def _timeline(r: RolloutView) -> Timeline:
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
    )


def _human_reply(p: Point | None) -> tuple[float, float] | None:
    """The person's reply on the stream clock (turn ends with a labelled reply)."""
    if p is None or p.reply_start_conv_s is None or p.reply_end_conv_s is None:
        return None
    return p.reply_start_conv_s - p.stream_start_conv_s, p.reply_end_conv_s - p.stream_start_conv_s


def _said(r: RolloutView) -> list[str]:
    """What each side said: the corpus's texts, the system's transcript and its own text."""
    said: list[tuple[str, str]] = []
    p, s = r.point, r.score
    if p is not None:
        if p.question:
            said.append(("The question", p.question))
        if p.gold_answer:
            said.append(("Gold answer", p.gold_answer))
        elif p.reply_text:
            replied = p.kind is PointKind.TURN_END
            said.append(
                ("What the person replied" if replied else "What the person said", p.reply_text)
            )
    if s is not None and s.reply is not None:
        said.append(("The system's reply (scored transcript)", s.reply.transcript))
    if s is not None and s.recall is not None:
        said.append(("The system's answer (scored transcript)", s.recall.transcript))
    if s is not None:
        words = " ".join(w.text.strip() for e in s.evidence for w in e.words)
        said.append(("Every word the system said", words or "(none)"))
    parts = ["<h2>What was said</h2>"] if said or (r.trace and r.trace.texts) else []
    parts += [f'<h4>{escape(k)}</h4><p class="said">{escape(v)}</p>' for k, v in said]
    if r.trace and r.trace.texts:
        items = "".join(
            f"<li>{t:.2f} s ({escape(kind)}): {escape(text)}</li>"
            for t, kind, text in r.trace.texts
        )
        parts += ["<h4>Text the system sent</h4>", f"<ul>{items}</ul>"]
    return parts


def _scores_of(r: RolloutView) -> list[str]:
    """Every pause or reply metric; a recall answer's verdicts with each judge's reason."""
    s = r.score
    if s is None:
        return []
    metrics: dict[str, Any] = {}
    if s.pause is not None:
        metrics = {**asdict(s.pause), "outcome": s.pause.outcome.value}
    elif s.reply is not None:
        metrics = {k: v for k, v in asdict(s.reply).items() if k != "transcript"}
    metrics |= {"status": s.status.value, "late input": s.late_input, "wordless": s.wordless}
    rows = "".join(
        f"<dt>{escape(k.replace('_', ' '))}</dt><dd>{escape(show(_plain(v)))}</dd>"
        for k, v in metrics.items()
    )
    parts = ["<h2>Scores</h2>", f'<dl class="facts">{rows}</dl>']
    if s.recall is None:
        return parts
    strict = s.recall.strict
    parts += [
        f"<p>Strict matcher: {'correct' if strict.correct else 'wrong'}; matched "
        f"{escape(', '.join(strict.matched) or 'none')} of {escape(', '.join(strict.words))} "
        f"({strict.needed} needed).</p>",
    ]
    for j in s.recall.judges:
        parts.append(
            f"<p>{escape(j.model)} ({escape(j.answered_by)}, prompt "
            f"{escape(j.prompt_version)}): {'correct' if j.correct else 'wrong'}. "
            f'{escape(j.reason)}</p><p class="said">{escape(j.raw)}</p>'
        )
    return parts


def _plain(value: Any) -> Cell:
    """A metric as a table cell: yes or no for flags."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return value if isinstance(value, str | int | float) or value is None else str(value)
