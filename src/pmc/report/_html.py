"""The static HTML report: one folder that opens from disk, with no server and no script.

``index.html`` leads with the summary (every system against the person), then holds the tables,
the figures and an index of every rollout, grouped by system and point kind, with each one's
outcome. Each rollout has a page, ``rollouts/<system>/<point_id>-<rollout>.html``, with its
timeline and one stereo player, ``audio/<system>/<point_id>-<rollout>.flac`` (the person left,
the system right, on the stream clock: :mod:`pmc.report._listen`), and, where the run was under
conditions, a second player of what the system heard, ``<point_id>-<rollout>-heard.flac``.
The index's and every page's ``<title>`` and ``<h1>`` name the run's conditions.
Every link is relative, so the folder can be moved. Every text that came from a system or a
corpus (transcripts, words, replies, questions, answers, descriptions, ids) is escaped, and
each page's content security policy forbids scripts besides.

The rollouts are read by :mod:`pmc.report._rollouts`, and each rollout's page is made by
:mod:`pmc.report._pages`; this module writes them, with the index.
"""

from __future__ import annotations

import os
import shutil
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from html import escape
from importlib import resources
from pathlib import Path

from pmc.harness import Run, SystemEntry
from pmc.points import PointKind, points_dir
from pmc.report._data import RunData
from pmc.report._heading import under
from pmc.report._listen import (
    clip_at_s,
    copy_heard,
    person_speech,
    point_audio,
    seat_speech,
    write_stereo,
)
from pmc.report._listen import live_s as streamed_s
from pmc.report._pages import (
    INDEX,
    KIND_NAMES,
    Listen,
    href,
    outcome,
    rollout_body,
    system_anchor,
)
from pmc.report._review import REVIEW_TABLE_PREFIX
from pmc.report._rollouts import RolloutView, read_rollouts
from pmc.report._write import ROLLOUTS_USED
from pmc.scoring import ScoreSettings
from pmc.table import Cell, Figure, Table, show

HOW_TO_READ = (
    "How to read: each table and figure compares systems within one kind of point (pauses, "
    "turn ends, recall), never pooled across kinds; times are seconds on the stream clock, "
    "from the first live sample. Every rollout below links to its page: a timeline of when "
    "the person spoke and where the system spoke, and the exchange to listen to in stereo "
    "(the person left, the system right)."
)
AUDIO_WORKERS = min(4, os.cpu_count() or 1)
"""Threads that code the rollouts' stereo files: coding them is most of writing the HTML."""
_CSP = "script-src 'none'; object-src 'none'; base-uri 'none'"
"""Defence in depth: should a text ever escape unescaped, the browser still runs nothing."""


def write_html(
    folder: Path,
    data: RunData,
    tables: Sequence[Table],
    figures: Sequence[Figure],
    title: str,
    summary: Sequence[Table | Figure] = (),
) -> Path:
    """Write the HTML report of a run into ``folder``; returns ``folder/index.html``.

    Args:
        folder: The report folder (the figures' PNGs are already there).
        data: The run as the report read it (:func:`~pmc.report._data.load_run`); its rollouts'
            traces are read here, one point at a time.
        tables: The report's tables, in order.
        figures: Its figures, in order.
        title: The report's title (naming the run's conditions, where it had any).
        summary: What leads the index, before every other table and figure: the summary's
            figure and table.
    """
    run = Run(data.run_dir)
    systems = {name: data.entries.get(name) for name in sorted(data.systems)}
    points = data.points
    scored = {system: system not in data.unscored for system in systems}
    rollouts: list[RolloutView] = []
    for system in systems:
        found = {(s.point_id, s.rollout): s for s in data.scores.get(system, [])}
        rollouts += read_rollouts(run, system, points, found)
    css = (resources.files("pmc.report") / "data" / "report.css").read_text(encoding="utf-8")
    by_point: dict[tuple[str, int], list[RolloutView]] = defaultdict(list)
    for r in rollouts:
        by_point[(r.point_id, r.k)].append(r)
    # Pages and audio of rollouts that are no longer in the run would otherwise linger.
    for stale in ("rollouts", "audio"):
        shutil.rmtree(folder / stale, ignore_errors=True)
    suffix = under(data.conditions)
    # A point's audio is read once for all its rollouts, and let go before the next point's.
    # Its rollouts' stereo files are coded on threads (libsndfile works outside the GIL) while
    # this thread writes their pages.
    with ThreadPoolExecutor(AUDIO_WORKERS) as pool:
        for point_id in sorted({r.point_id for r in rollouts}):
            mine = [r for r in rollouts if r.point_id == point_id]
            audio = point_audio(mine[0].point, points_dir(run.workdir))
            coded = [pool.submit(write_stereo, folder, r, audio) for r in mine]
            heard = [pool.submit(copy_heard, folder, r) for r in mine]
            for r, stereo, kept in zip(mine, coded, heard, strict=True):
                settings = r.score.settings if r.score is not None else ScoreSettings()
                gate, onset = settings.gate, settings.onset
                speech = (
                    person_speech(audio, streamed_s(r, audio), gate, onset, clip_at_s(r)),
                    seat_speech(audio, gate, onset),
                )
                same = by_point[(r.point_id, r.k)]
                audio_files = Listen(stereo.result(), kept.result(), data.conditions)
                body = rollout_body(r, systems.get(r.system), audio_files, speech, same)
                title_r = f"{r.system} · {r.point_id} · rollout {r.k}{suffix}"
                # Plain writes, not atomic ones: a report is rewritten whole, and hundreds of
                # fsyncs would take longer than writing the pages.
                _write(folder / r.page, _page(title_r, body, css))
    index = folder / INDEX
    body = _index_body(title, summary, tables, figures, systems, scored, rollouts)
    _write(index, _page(title, body, css))
    return index


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _page(title: str, body: str, css: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        # An empty icon: otherwise the browser asks for favicon.ico beside the page.
        '<link rel="icon" href="data:,">'
        f"<title>{escape(title)}</title><style>{css}</style></head>\n"
        f"<body>\n{body}\n</body></html>\n"
    )


def _cell(cell: Cell) -> str:
    css = ' class="num"' if isinstance(cell, int | float) and not isinstance(cell, bool) else ""
    return f"<td{css}>{escape(show(cell))}</td>"


def _table(table: Table) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in table.columns)
    rows = "".join("<tr>" + "".join(_cell(c) for c in row) + "</tr>\n" for row in table.rows)
    note = f'<p class="note">{escape(table.note)}</p>' if table.note else ""
    return (
        f'<section id="{escape(table.key)}"><table><caption>{escape(table.title)}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>\n{rows}</tbody></table>{note}</section>"
    )


def _figure(figure: Figure) -> str:
    return (
        f'<figure id="{escape(figure.key)}"><img src="{href("", figure.file)}" '
        f'alt="{escape(figure.title)}"><figcaption>{escape(figure.title)}</figcaption></figure>'
    )


def _index_body(
    title: str,
    summary: Sequence[Table | Figure],
    tables: Sequence[Table],
    figures: Sequence[Figure],
    systems: dict[str, SystemEntry | None],
    scored: dict[str, bool],
    rollouts: Sequence[RolloutView],
) -> str:
    nav = [f'<li><a href="#{escape(t.key)}">{escape(t.title)}</a></li>' for t in tables]
    nav += [f'<li><a href="#{escape(f.key)}">{escape(f.title)}</a></li>' for f in figures]
    nav += [f'<li><a href="#{system_anchor(s)}">Rollouts of {escape(s)}</a></li>' for s in systems]
    how = f"{HOW_TO_READ} {ROLLOUTS_USED}"
    parts = [f"<h1>{escape(title)}</h1>", f'<p class="how">{escape(how)}</p>']
    if summary:
        lead = "".join(_figure(s) if isinstance(s, Figure) else _table(s) for s in summary)
        parts.append(f'<section id="lead"><h2>Summary</h2>{lead}</section>')
    parts.append(f"<nav><ul>{''.join(nav)}</ul></nav>")
    reviewed = [t for t in tables if t.key.startswith(REVIEW_TABLE_PREFIX)]
    tables = [t for t in tables if not t.key.startswith(REVIEW_TABLE_PREFIX)]
    if tables:
        parts += ["<h2>Tables</h2>", *(_table(t) for t in tables)]
    if reviewed:
        parts += ['<h2 id="human-review">Human review</h2>', *(_table(t) for t in reviewed)]
    if figures:
        parts += ["<h2>Figures</h2>", *(_figure(f) for f in figures)]
    parts.append("<h2>Rollouts</h2>")
    for system in sorted(systems):
        mine = [r for r in rollouts if r.system == system]
        parts.append(_system_section(system, systems[system], scored.get(system, False), mine))
    return "\n".join(parts)


def _system_section(
    system: str, entry: SystemEntry | None, scored: bool, mine: list[RolloutView]
) -> str:
    about = (
        ["adapter ? v?", "? clock"]
        if entry is None
        else [
            escape(entry.card.description),
            f"adapter {escape(entry.card.adapter)} v{entry.adapter_version}",
            f"{escape(entry.clock.value)} clock",
        ]
    )
    if not scored:
        about.append("not scored yet")
    parts = [
        f'<h3 id="{system_anchor(system)}">{escape(system)}</h3>',
        f'<p class="muted">{" · ".join(a for a in about if a)}</p>',
    ]
    kinds: dict[PointKind | None, list[RolloutView]] = defaultdict(list)
    for r in mine:
        kinds[r.kind].append(r)
    for kind in [*PointKind, None]:
        if not kinds.get(kind):
            continue
        name = KIND_NAMES[kind] if kind else "unknown kind"
        rows = []
        for r in kinds[kind]:
            text, css = outcome(r)
            rows.append(
                f'<tr><td><a href="{href("", r.page)}">{escape(r.point_id)}</a></td>'
                f"<td>{r.k}</td><td>{escape(r.point.conversation_id if r.point else '-')}</td>"
                f'<td class="{css}">{escape(text)}</td></tr>'
            )
        parts.append(
            f"<h4>{escape(name)} ({len(kinds[kind])})</h4><table><thead><tr><th>point</th>"
            "<th>rollout</th><th>conversation</th><th>outcome</th></tr></thead><tbody>\n"
            + "\n".join(rows)
            + "</tbody></table>"
        )
    if not mine:
        parts.append('<p class="muted">No rollouts yet.</p>')
    return "\n".join(parts)
