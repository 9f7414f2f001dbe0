"""The HTML report opened in headless Chromium: it renders cleanly, plays, and escapes.

A small run is built in the real formats without the demo pipeline: four synthetic points (one
of each kind) whose corpus texts hold markup, a scripted system that speaks tones and sends
markup as text, scores written directly with a transcript holding ``<script>``, and a second
system that is unscored and has a failed rollout. The report is written, moved (every link must
be relative), and opened from disk in Debian's chromium through Playwright.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import numpy as np
import pytest
from matplotlib.figure import Figure as Plot

from pmc import io
from pmc.asr import TimedWord
from pmc.audio import SAMPLE_RATE, FloatArray, wav_bytes
from pmc.corpus import Channel
from pmc.harness import RunSettings, run_rollouts, runs_dir
from pmc.points import MANIFEST_FILE, Point, PointKind, points_dir
from pmc.report._html import write_html
from pmc.scoring import (
    SCORES_DIR,
    Evidence,
    PauseOutcome,
    PauseScore,
    RecallScore,
    RecallVerdict,
    ReplyScore,
    Score,
    ScoreSettings,
    ScoreStatus,
    StrictVerdict,
)
from pmc.systems import Family, SystemCard
from pmc.table import Figure, Table
from pmc.testing.systems import ScriptedSystem, tone

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
EVIL = "<script>alert(1)</script>"
"""A recognised word, as a hostile or broken system might make Whisper hear it."""
QUESTION = "What did <script>alert(2)</script> say?"
REPLY = 'She said <img src=x onerror="alert(3)"> twice.'
DESCRIPTION = "speaks tones <em>loudly</em> & sends markup"
SENT = "<b>bold</b> claim"
"""Text the scripted system sends alongside its audio."""
FRAME = 1920


def _frames(audio: FloatArray) -> FloatArray:
    return np.concatenate([audio, np.zeros(-len(audio) % FRAME, dtype=np.float32)])


def _quiet(seconds: float) -> FloatArray:
    return np.zeros(round(seconds * SAMPLE_RATE), dtype=np.float32)


def _point(pdir: Path, kind: PointKind, n: int, live: FloatArray, b: float, e: float) -> Point:
    pid = f"{kind.value}-{n:012d}"
    folder = pdir / "audio" / pid
    cuts = {"history_text": "history.json"}
    for name, audio in (("history_user", tone(1.0)), ("history_system", _quiet(1.0))):
        io.write_bytes(folder / f"{name}.wav", wav_bytes(_frames(audio), SAMPLE_RATE))
        cuts[name] = f"{name}.wav"
    io.write_bytes(folder / "live.wav", wav_bytes(_frames(live), SAMPLE_RATE))
    cuts["live"] = "live.wav"
    io.write_json(folder / "history.json", {"messages": [{"role": "user", "text": "Hi."}]})
    recall = kind in (PointKind.CONVERSATION_RECALL, PointKind.FACT_RECALL)
    start = 100.0 * n
    turn_end = kind is PointKind.TURN_END
    return Point(
        point_id=pid,
        kind=kind,
        conversation_id=f"conv-<{n}>",
        user=Channel.B if recall else Channel.A,
        system=Channel.A if recall else Channel.B,
        history_start_conv_s=start - 1.0,
        stream_start_conv_s=start,
        boundary_conv_s=start + b,
        boundary_stream_s=b,
        boundary_end_conv_s=start + e,
        boundary_end_stream_s=e,
        stream_end_conv_s=start + len(_frames(live)) / SAMPLE_RATE,
        reply_start_conv_s=start + e + 0.4 if turn_end else None,
        reply_end_conv_s=start + e + 1.4 if turn_end else None,
        reply_text="Paris <i>!</i>" if recall else REPLY,
        question=QUESTION if recall else "",
        gold_answer="Paris <i>!</i>" if recall else "",
        prefix_s=30.0 if recall else None,
        cuts={k: f"audio/{pid}/{v}" for k, v in cuts.items()},
    )


def _write_points(workdir: Path) -> list[Point]:
    pdir = points_dir(workdir)
    points = [
        _point(
            pdir,
            PointKind.PAUSE,
            1,
            np.concatenate([tone(1.2), _quiet(0.96), tone(1.2)]),
            1.2,
            2.16,
        ),
        _point(pdir, PointKind.TURN_END, 2, tone(1.92), 1.92, 1.92),
        _point(pdir, PointKind.CONVERSATION_RECALL, 3, tone(1.44), 1.44, 1.44),
        _point(pdir, PointKind.FACT_RECALL, 4, tone(1.44), 1.44, 1.44),
    ]
    with io.atomic_open(pdir / MANIFEST_FILE) as handle:
        for p in points:
            handle.write(io.json_line(p.to_dict()))
    return points


def _score(point: Point) -> Score:
    b = point.boundary_end_stream_s
    words = (TimedWord(EVIL, b + 0.3, b + 0.7, 0.9), TimedWord("hello", b + 0.7, b + 1.0, 0.9))
    evidence = (
        Evidence(b - 0.6, b - 0.4, (), None),  # wordless phonation
        Evidence(b + 0.3, b + 1.0, words, b + 0.3),
    )
    transcript = f"{EVIL} hello"
    extra: dict[str, Any] = {}
    if point.kind is PointKind.PAUSE:
        extra["pause"] = PauseScore(PauseOutcome.AFTER, None, False, False, True, 0.3)
    elif point.kind is PointKind.TURN_END:
        extra["reply"] = ReplyScore(0.3, 0.7, 2, 1.0, 4, 0.7, 0.5, False, transcript, 0.2, 0.1)
    else:
        strict = StrictVerdict(point.kind, False, ("paris",), (), 1)
        judge = RecallVerdict(
            "fake:<judge>", "fake-1", "v1", "item", False, "no <u>Paris</u>", EVIL
        )
        extra["recall"] = RecallScore(transcript, strict, (judge,))
    return Score(
        point.point_id,
        "talker",
        0,
        point.kind,
        point.conversation_id,
        ScoreStatus.SCORED,
        ScoreSettings(asr="faster-whisper:tiny.en"),
        evidence=evidence,
        **extra,
    )


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The working directory the report's run is in."""
    return tmp_path_factory.mktemp("html") / "work"


@pytest.fixture(scope="module")
def report(workdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report folder, written and then moved away from where it was written."""
    points = _write_points(workdir)
    say = [{"at_s": p, "seconds": 0.5, "text": SENT} for p in (0.2, 2.5)]
    talker = SystemCard("talker", "scripted", Family.LOCAL, DESCRIPTION, params={"say": say})
    flaky = SystemCard("flaky", "scripted", Family.LOCAL, "fails once", params={"say": []})
    ScriptedSystem.refuse = 1  # the first of flaky's rollouts fails
    try:
        run_rollouts(workdir, [flaky], RunSettings("r", retries=0))
    finally:
        ScriptedSystem.refuse = 0
    run_rollouts(workdir, [talker], RunSettings("r"))
    run = runs_dir(workdir) / "r"
    with io.atomic_open(run / SCORES_DIR / "talker.jsonl") as handle:
        for p in points:
            handle.write(io.json_line(_score(p).to_dict()))

    folder = workdir / "report"
    (folder / "figures").mkdir(parents=True)
    plot = Plot(figsize=(2, 1.5))  # no pyplot: no backend or global state
    plot.subplots().plot([0, 1], [1, 0])
    plot.savefig(folder / "figures" / "lines.png")
    tables = [
        Table(
            "main",
            "Main <b>table</b>",
            ("system", "takeover"),
            (("talker <b>loud</b>", 0.5), ("flaky", None)),
            note="Read <i>this</i>.",
        )
    ]
    figures = [Figure("lines", "A <b>figure</b>", "figures/lines.png")]
    index = write_html(folder, run, tables, figures, "Report <script>x</script>")
    assert index == folder / "index.html"
    moved = tmp_path_factory.mktemp("moved") / "report"
    shutil.move(folder, moved)
    return moved


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: the HTML report is tested in Debian's chromium. Install it "
            "with `make chromium` (as root) or `sudo apt-get install -y chromium`."
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


_READY = """() => [...document.images].every(i => i.complete)
    && [...document.querySelectorAll('audio')].every(a => a.readyState >= 1 || a.error)"""

_STATE = """() => ({
    images: [...document.images].map(i => i.naturalWidth),
    audio: [...document.querySelectorAll('audio')]
        .map(a => [a.readyState, a.error && a.error.code]),
    injected: document.querySelectorAll('script, b, i, u, em, [onerror]').length,
    links: [...document.querySelectorAll('a[href]')].map(a => a.href),
    sources: [...document.querySelectorAll('[src]')].map(e => e.src),
    svgWords: [...document.querySelectorAll('svg text.word')].map(t => t.firstChild.nodeValue),
    humanReply: document.querySelectorAll('svg rect.human').length,
})"""


def _open(browser: Any, path: Path) -> tuple[str, dict[str, Any]]:
    """Open a page; its visible text and state, once it loaded cleanly."""
    page = browser.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("dialog", lambda d: problems.append(f"dialog: {d.message}"))
    page.goto(path.as_uri())
    page.wait_for_function(_READY, timeout=10_000)
    state: dict[str, Any] = page.evaluate(_STATE)
    text: str = page.inner_text("body")
    page.close()
    assert problems == [], f"{path.name}: {problems}"
    assert all(width > 0 for width in state["images"]), f"{path.name}: an image did not load"
    for ready, error in state["audio"]:
        assert error is None and ready >= 1, f"{path.name}: audio {ready=} {error=}"
    assert state["injected"] == 0, f"{path.name}: markup from the data became elements"
    for url in state["links"] + state["sources"]:
        parsed = urlparse(url)
        assert parsed.scheme == "file", f"{path.name}: {url} leaves the folder"
        assert Path(unquote(parsed.path)).exists(), f"{path.name}: {url} is broken"
    return text, state


def test_the_index_shows_tables_figures_and_every_rollout(report: Path, browser: Any) -> None:
    text, state = _open(browser, report / "index.html")
    assert "Main <b>table</b>" in text and "talker <b>loud</b>" in text
    assert "Read <i>this</i>." in text and "A <b>figure</b>" in text
    assert "Report <script>x</script>" in text and DESCRIPTION in text
    assert state["images"] and len(state["images"]) == 1
    pages = {Path(unquote(urlparse(u).path)) for u in state["links"] if u.endswith(".html")}
    assert pages == set((report / "rollouts").rglob("*.html"))
    assert len(pages) == 8  # two systems at four points
    assert "failed: transport: connection refused (scripted)" in text
    assert "not scored" in text


@pytest.mark.parametrize("kind", list(PointKind))
def test_a_rollout_page_plays_both_sides_and_shows_words_as_text(
    report: Path, browser: Any, kind: PointKind
) -> None:
    (page,) = (report / "rollouts" / "talker").glob(f"{kind.value}-*-0.html")
    text, state = _open(browser, page)
    assert len(state["audio"]) == 2  # the live input and the played reply
    assert EVIL in text  # the transcript, as visible text
    assert EVIL in state["svgWords"]  # and as a word on the timeline
    assert SENT in text
    if kind is PointKind.TURN_END:
        assert REPLY in text
        assert state["humanReply"] == 1
    elif kind is not PointKind.PAUSE:
        assert QUESTION in text and "Paris <i>!</i>" in text and "no <u>Paris</u>" in text


def test_failed_and_unscored_rollouts_still_have_pages(report: Path, browser: Any) -> None:
    pages = sorted((report / "rollouts" / "flaky").glob("*.html"))
    assert len(pages) == 4  # one a point
    texts = [_open(browser, p) for p in pages]
    failed = [(t, s) for t, s in texts if "connection refused" in t]
    assert len(failed) == 1
    assert len(failed[0][1]["audio"]) == 1  # the live input; nothing was played
    assert all(len(s["audio"]) == 2 for t, s in texts if (t, s) not in failed)


def _same_file(copy: Path, source: Path) -> bool:
    """The report's file is the source: a hard link to it, or (across file systems) its bytes."""
    return copy.samefile(source) or copy.read_bytes() == source.read_bytes()


def test_audio_is_linked_not_decoded(report: Path, workdir: Path) -> None:
    played = sorted((report / "audio" / "played").rglob("*.flac"))
    live = sorted((report / "audio" / "live").glob("*.wav"))
    assert len(played) == 7 and len(live) == 4  # one rollout failed; points are shared
    assert all(os.stat(p).st_size > 0 for p in played + live)
    # Each is the rollout's own played.flac (audio/played/SYSTEM/POINT-K.flac) and the point's
    # live cut, not a decoded and re-encoded copy.
    rollouts = runs_dir(workdir) / "r" / "rollouts"
    for path in played:
        point_id, k = path.stem.rsplit("-", 1)
        source = rollouts / path.parent.name / point_id / k / "played.flac"
        assert _same_file(path, source), path
    for path in live:
        assert _same_file(path, points_dir(workdir) / "audio" / path.stem / "live.wav"), path
