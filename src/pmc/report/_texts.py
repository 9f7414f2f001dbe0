"""What a rollout's page says in words: each side's texts, and every score with its verdicts.

Every text that came from a system or a corpus is escaped.
"""

from __future__ import annotations

from dataclasses import asdict
from html import escape
from typing import Any

from pmc.report._rollouts import RolloutView
from pmc.table import Cell, show


def said(r: RolloutView) -> list[str]:
    """What each side said: the corpus's texts, the system's transcript and its own text."""
    said: list[tuple[str, str]] = []
    p, s = r.point, r.score
    if p is not None:
        if p.question:
            said.append(("The question", p.question))
        if p.gold_answer:
            said.append(("Gold answer", p.gold_answer))
        elif p.reply_text:
            replied = p.kind.replies
            said.append(
                ("What the person replied" if replied else "What the person said", p.reply_text)
            )
    if p is not None and p.inject_text:
        said.append(("What the person said over the reply (the clip)", p.inject_text))
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


def scores_of(r: RolloutView) -> list[str]:
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
