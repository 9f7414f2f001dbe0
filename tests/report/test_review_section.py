"""The report's human-review section: there when a run's points were reviewed, absent otherwise."""

from __future__ import annotations

import shutil
from pathlib import Path

from pmc.points import read_points, read_windows
from pmc.report._html import _index_body
from pmc.report._review import review_section
from pmc.review import Decision, Entry, Reason, Target, Window, append, now_utc


def test_the_section_holds_the_decisions_on_the_run_points_only(
    review_built: Path, tmp_path: Path
) -> None:
    workdir = tmp_path / "w"
    shutil.copytree(review_built, workdir)
    drawn = {p.point_id for p in read_points(workdir)}
    windows = read_windows(workdir)
    left_out = next(w for w in windows if not w.drawn)
    assert review_section(workdir, drawn) == []  # nobody reviewed anything yet
    append(workdir, _reject(left_out))
    assert review_section(workdir, drawn) == []  # a window outside the run does not count
    in_run = next(w for w in windows if w.drawn)
    append(workdir, _reject(in_run))
    tables = review_section(workdir, drawn)
    assert [t.key for t in tables] == [
        "review_decisions",
        "review_engine_vs_human",
        "review_reviewers",
    ]
    decisions = dict(zip(tables[0].columns, tables[0].rows[0], strict=True))
    assert (decisions["windows"], decisions["rejected: listener spoke"]) == (1, 1)
    body = _index_body("t", [], tables, [], {}, {}, [])
    assert '<h2 id="human-review">Human review</h2>' in body
    assert body.index('<h2 id="human-review">') < body.index("<caption>Window decisions")


def _reject(w: Window) -> Entry:
    return Entry(
        "ann", Target.WINDOW, w.window_id, w.conversation_id, w.label_id, w.label_sha256,
        Decision.REJECT, now_utc(), Reason.LISTENER_SPOKE,
    )  # fmt: skip
