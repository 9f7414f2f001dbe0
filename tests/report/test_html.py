"""The HTML report opened in headless Chromium: it renders cleanly, plays, and escapes.

A small run is built in the real formats without the demo pipeline: four synthetic points (one
of each kind) whose corpus texts hold markup, a scripted system that speaks tones and sends
markup as text, scores written directly with a transcript holding ``<script>``, and a second
system that is unscored and has a failed rollout. The HTML is written, moved (every link must
be relative), and opened from disk in Debian's chromium through Playwright; the whole report of
the same run is written too, to check that its summary leads and that writing it warns nothing.
"""

from __future__ import annotations

import base64
import csv
import html
import json
import re
import shutil
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import numpy as np
import pytest
import soundfile as sf
from matplotlib.figure import Figure as Plot

from pmc import io
from pmc.asr import TimedWord
from pmc.audio import SAMPLE_RATE, FloatArray, wav_bytes
from pmc.conditions import parse_conditions
from pmc.corpus import Channel
from pmc.harness import HEARD_FILE, SCORES_DIR, Run, RunSettings, run_rollouts, runs_dir
from pmc.points import MANIFEST_FILE, Point, PointKind, points_dir
from pmc.report import build_report, load_run
from pmc.report._html import write_html
from pmc.report._listen import HISTORY_TAIL_S
from pmc.report._write import ROLLOUTS_USED
from pmc.scoring import (
    ClipScore,
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
    TalkOver,
)
from pmc.systems import Family, SystemCard
from pmc.table import Figure, Table
from pmc.testing.systems import ScriptedSystem, tone
from tests.report.browser import open_page

EVIL = "<script>alert(1)</script>"
"""A recognised word, as a hostile or broken system might make Whisper hear it."""
QUESTION = "What did <script>alert(2)</script> say?"
REPLY = 'She said <img src=x onerror="alert(3)"> twice.'
DESCRIPTION = "speaks tones <em>loudly</em> & sends markup"
OVER = "<i>wait</i> what"
"""What the person's clip says (markup, as a transcript might hold)."""
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
    # Three seconds of history: the system's seat speaks for two, then the person for one.
    person = np.concatenate([_quiet(2.0), tone(1.0)])
    seat = np.concatenate([tone(2.0, hz=330.0), _quiet(1.0)])
    for name, audio in (("history_user", person), ("history_system", seat)):
        io.write_bytes(folder / f"{name}.wav", wav_bytes(_frames(audio), SAMPLE_RATE))
        cuts[name] = f"{name}.wav"
    io.write_bytes(folder / "live.wav", wav_bytes(_frames(live), SAMPLE_RATE))
    cuts["live"] = "live.wav"
    io.write_json(folder / "history.json", {"messages": [{"role": "user", "text": "Hi."}]})
    recall = kind in (PointKind.CONVERSATION_RECALL, PointKind.FACT_RECALL)
    start = 100.0 * n
    turn_end = kind.replies
    talk_over: dict[str, Any] = {}
    if kind.talks_over:  # the person's clip, 0.2 s into the reply the talker starts at 2.5 s
        io.write_bytes(folder / "inject.wav", wav_bytes(_frames(tone(0.6, hz=440.0)), SAMPLE_RATE))
        cuts["inject"] = "inject.wav"
        talk_over = {"inject_offset_s": 0.2, "inject_text": OVER, "person_yield_s": 0.3}
    return Point(
        point_id=pid,
        kind=kind,
        conversation_id=f"conv-<{n}>",
        user=Channel.B if recall else Channel.A,
        system=Channel.A if recall else Channel.B,
        history_start_conv_s=start - 3.0,
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
        prefix_s=120.0 if recall else None,  # the main table reports recall at 120 s
        cuts={k: f"audio/{pid}/{v}" for k, v in cuts.items()},
        **talk_over,
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
        _point(pdir, PointKind.BARGE_IN, 5, tone(1.92), 1.92, 1.92),
        _point(pdir, PointKind.BACKCHANNEL, 6, tone(1.92), 1.92, 1.92),
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
    elif point.kind.replies:
        extra["reply"] = ReplyScore(0.3, 0.7, 2, 1.0, 4, 0.7, 0.5, False, transcript, 0.2, 0.1)
        extra["talk_over"] = TalkOver(b - 1.0, 0.5, 1, ((b - 1.0, b - 0.5),))
        if point.kind.talks_over:
            extra["clip"] = ClipScore(True, 2.7, 3.3, True, True, 0.3, 0.3, False, "", 0.3)
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
def run(workdir: Path) -> Path:
    """The run: talker scored at the six points, flaky unscored with one failed rollout."""
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
    path = runs_dir(workdir) / "r"
    with io.atomic_open(path / SCORES_DIR / "talker.jsonl") as handle:
        for p in points:
            handle.write(io.json_line(_score(p).to_dict()))
    return path


@pytest.fixture(scope="module")
def report(run: Path, workdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The HTML alone, with tables whose texts hold markup, written and then moved away."""
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
    index = write_html(folder, load_run(run), tables, figures, "Report <script>x</script>")
    assert index == folder / "index.html"
    moved = tmp_path_factory.mktemp("moved") / "report"
    shutil.move(folder, moved)
    return moved


def test_the_index_shows_tables_figures_and_every_rollout(report: Path, browser: Any) -> None:
    text, state = open_page(browser, report / "index.html")
    assert "Main <b>table</b>" in text and "talker <b>loud</b>" in text
    assert "Read <i>this</i>." in text and "A <b>figure</b>" in text
    assert "Report <script>x</script>" in text and DESCRIPTION in text
    assert state["images"] and len(state["images"]) == 1
    pages = {Path(unquote(urlparse(u).path)) for u in state["links"] if u.endswith(".html")}
    assert pages == set((report / "rollouts").rglob("*.html"))
    assert len(pages) == 12  # two systems at six points
    assert "failed: transport: connection refused (scripted)" in text
    assert "not scored" in text


@pytest.mark.parametrize("kind", list(PointKind))
def test_a_rollout_page_plays_the_exchange_and_shows_words_as_text(
    report: Path, browser: Any, kind: PointKind
) -> None:
    (page,) = (report / "rollouts" / "talker").glob(f"{kind.value}-*-0.html")
    text, state = open_page(browser, page)
    assert len(state["audio"]) == 1  # one stereo player: the person left, the system right
    assert EVIL in text  # the transcript, as visible text
    assert EVIL in state["svgWords"]  # and as a word on the timeline
    assert SENT in text
    assert state["personSpeech"]  # the person's speech, found by the gate
    if kind.replies:
        assert REPLY in text
        assert state["humanReply"] == 1
    if kind.talks_over:  # the clip: heard on the person's side, framed, said, and scored
        assert OVER in text and "yielded: stopped 0.30 s after" in text
        assert 'class="clip"' in page.read_text()
    if kind in (PointKind.CONVERSATION_RECALL, PointKind.FACT_RECALL):
        assert QUESTION in text and "Paris <i>!</i>" in text and "no <u>Paris</u>" in text


def test_failed_and_unscored_rollouts_still_have_pages(report: Path, browser: Any) -> None:
    pages = sorted((report / "rollouts" / "flaky").glob("*.html"))
    assert len(pages) == 6  # one a point
    texts = [open_page(browser, p) for p in pages]
    failed = [t for t, _ in texts if "connection refused" in t]
    assert len(failed) == 1
    assert "then from t = 0 silence (nothing was played)" in failed[0]
    assert all(len(s["audio"]) == 1 for _, s in texts)  # the failed one still has the person


def _pcm(path: Path) -> np.ndarray[Any, np.dtype[np.int16]]:
    data, _ = sf.read(str(path), dtype="int16", always_2d=True)
    return np.asarray(data, dtype=np.int16)


def test_the_stereo_file_holds_the_person_left_and_the_system_right(
    report: Path, workdir: Path
) -> None:
    """Each channel holds its source's samples exactly, both on the stream clock."""
    tail = round(HISTORY_TAIL_S * SAMPLE_RATE)
    rollouts = runs_dir(workdir) / "r" / "rollouts" / "talker"
    files = sorted((report / "audio" / "talker").glob("*.flac"))
    assert len(files) == 6
    for path in files:
        point_id, k = path.stem.rsplit("-", 1)
        stereo = _pcm(path)
        trace = io.read_json(rollouts / point_id / k / "trace.json")
        stop = trace["protocol"]["stop_stream_s"]
        assert stereo.shape == (tail + round(stop * SAMPLE_RATE), 2)
        audio = points_dir(workdir) / "audio" / point_id
        history = _pcm(audio / "history_user.wav")[:, 0]  # 3 s: padded in front to the tail
        live = _pcm(audio / "live.wav")[:, 0]
        assert not stereo[: tail - len(history), 0].any()
        assert np.array_equal(stereo[tail - len(history) : tail, 0], history)
        streamed = round(trace["protocol"]["live_s"] * SAMPLE_RATE)
        assert np.array_equal(stereo[tail : tail + streamed, 0], live[:streamed])
        clip_at = trace["protocol"].get("clip_stream_s")
        if point_id.startswith(("barge_in", "backchannel")):
            # The person's clip, where it was played over the reply.
            assert clip_at is not None
            clip = _pcm(audio / "inject.wav")[:, 0]
            at = tail + round(clip_at * SAMPLE_RATE)
            heard = stereo[at : at + len(clip), 0]
            assert heard.any() and np.array_equal(heard, clip[: len(heard)])
        seat = _pcm(audio / "history_system.wav")[:, 0]
        assert not stereo[: tail - len(seat), 1].any()
        assert np.array_equal(stereo[tail - len(seat) : tail, 1], seat)
        assert stereo[tail - len(seat) : tail, 1].any()
        played = _pcm(rollouts / point_id / k / "played.flac")[:, 0]
        assert np.array_equal(stereo[tail:, 1], played)


_LOADED = """a => new Promise((resolve, reject) => {
    const done = () => resolve({duration: a.duration, ready: a.readyState});
    if (a.readyState >= 1) { done(); return; }
    a.addEventListener('loadedmetadata', done, {once: true});
    a.addEventListener('error', () => reject(new Error('audio error ' + a.error.code)));
    a.load();
})"""

_DECODE = """async ([b64, rate]) => {
    const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
    const decoded = await new OfflineAudioContext(2, 1, rate).decodeAudioData(bytes.buffer);
    return {channels: decoded.numberOfChannels, duration: decoded.duration};
}"""
"""Decodes a file with the browser's own decoder, at the file's rate."""


def test_the_stereo_player_loads_two_channels_as_long_as_the_rollout(
    report: Path, workdir: Path, browser: Any
) -> None:
    (html,) = (report / "rollouts" / "talker").glob("pause-*-0.html")
    point_id, k = html.stem.rsplit("-", 1)
    trace = io.read_json(
        runs_dir(workdir) / "r" / "rollouts" / "talker" / point_id / k / "trace.json"
    )
    expected = HISTORY_TAIL_S + trace["protocol"]["stop_stream_s"]
    page = browser.new_page()
    page.goto(html.as_uri())
    player = page.locator("audio.stereo")
    loaded = player.evaluate(_LOADED)  # waits for loadedmetadata, not for a while
    assert abs(loaded["duration"] - expected) <= 1 / SAMPLE_RATE
    src = player.evaluate("a => a.src")
    flac = Path(unquote(urlparse(src).path))
    decoded = page.evaluate(_DECODE, [base64.b64encode(flac.read_bytes()).decode(), SAMPLE_RATE])
    page.close()
    assert decoded["channels"] == 2
    assert abs(decoded["duration"] - expected) <= 1 / SAMPLE_RATE


def test_a_rollout_page_frames_where_the_system_talked_over_the_person(report: Path) -> None:
    """The turn-end point's score: talk over the person from 0.92 to 1.42 s (turn end 1.92 s)."""
    (html,) = (report / "rollouts" / "talker").glob("turn_end-*-0.html")
    text = html.read_text()
    assert text.count('class="talk-over"') == 1
    assert 'class="talk-over" data-start="0.9200" data-end="1.4200"' in text
    assert "<dt>talked over the person</dt><dd>0.50 s, from 0.92 s (1 stretch of talk)" in text
    (pause,) = (report / "rollouts" / "talker").glob("pause-*-0.html")
    assert 'class="talk-over"' not in pause.read_text()


def test_the_timeline_draws_the_pause_as_silence(report: Path, browser: Any) -> None:
    """The pause point's live input: 1.2 s of tone, the 0.96 s pause, 1.2 s of tone."""
    (html,) = (report / "rollouts" / "talker").glob("pause-*-0.html")
    _, state = open_page(browser, html)
    speech = state["personSpeech"]
    assert not [(a, b) for a, b in speech if a < 2.16 and b > 1.2]
    # The history's second of tone (then 40 ms of padding, bridged) runs on into the live tone:
    # one interval across t = 0; the envelope puts the onsets within a few ms of the tones'.
    before, after = [(a, b) for a, b in speech if b > 0]
    assert before == pytest.approx((-1.04, 1.2), abs=0.005)
    assert after == pytest.approx((2.16, 3.36), abs=0.005)


@pytest.fixture(scope="module")
def built(run: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The whole report of the run, by ``build_report``, and every warning written meanwhile."""
    folder = tmp_path_factory.mktemp("built") / "report"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build_report(run, resamples=50, folder=folder)
    return folder, [f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})" for w in caught]


def test_writing_the_report_warns_nothing(built: tuple[Path, list[str]]) -> None:
    assert built[1] == []


def test_the_summary_comes_first(built: tuple[Path, list[str]], browser: Any) -> None:
    folder, _ = built
    open_page(browser, folder / "index.html")  # it loads cleanly, the summary figure too
    page = browser.new_page()
    page.goto((folder / "index.html").as_uri())
    order = page.evaluate(
        """() => [...document.querySelectorAll('figure, table')]
            .map(e => e.id || (e.closest('section') || {}).id || e.tagName)"""
    )
    page.close()
    assert order[:2] == ["summary_figure", "summary"]
    assert "main_pause" in order  # the tables follow
    markdown = (folder / "report.md").read_text()
    # After the one line on which rollouts the tables read, the summary leads.
    assert markdown.startswith(ROLLOUTS_USED + "\n\n## Summary: each system against the person on")
    assert markdown.index("## Summary: each system against the person\n") < markdown.index(
        "## Main table"
    )


def test_the_summary_is_read_from_the_main_table(built: tuple[Path, list[str]]) -> None:
    folder, _ = built
    results = json.loads((folder / "results.json").read_text())
    summary = results["summary"]
    main = {(r["system"], r["kind"]): r["values"] for r in results["main_table"]}
    (row,) = summary["rows"]
    assert row["system"] == "talker" and row["reference"] is None
    questions = {q["key"]: q for q in summary["questions"]}
    assert list(questions) == ["hold", "latency", "length", "similarity", "recall"]
    assert questions["recall"]["metric"] == "judge:fake:<judge>"
    for key, q in questions.items():
        shown = row["values"][key]
        source = main[("talker", q["kind"])]
        if key == "hold":
            takeover = source["takeover"]
            assert shown["estimate"] == pytest.approx(1 - takeover["estimate"], abs=1e-4)
            assert shown["ci_low"] == pytest.approx(1 - takeover["ci_high"], abs=1e-4)
        else:
            assert shown == source[q["metric"]]
    # The person: every pause held, the labelled reply 0.4 s after the turn end, the rest 1.
    assert summary["person"] == {
        "hold": 1.0,
        "latency": 0.4,
        "length": 1.0,
        "similarity": 1.0,
        "recall": 1.0,
    }
    # The table shows the same numbers, to two decimals.
    table = list(csv.reader((folder / "tables" / "summary.csv").open()))
    assert table[1][0] == "the person" and table[2][0] == "talker"
    latency = main[("talker", "turn_end")]["latency_s"]["estimate"]
    assert table[2][2].startswith(f"{latency:.2f}")


def test_a_run_with_two_rollouts_gets_the_agreement_table(
    run: Path, workdir: Path, tmp_path: Path
) -> None:
    """The rollout-agreement table reaches the report when a system has a second rollout."""
    copy = tmp_path / "w"
    shutil.copytree(workdir, copy, ignore=shutil.ignore_patterns("report"))
    copied = copy / run.relative_to(workdir)
    scores = copied / SCORES_DIR / "talker.jsonl"
    first = [json.loads(line) for line in scores.read_text().splitlines()]
    with scores.open("a") as handle:
        for record in first:
            handle.write(io.json_line({**record, "rollout": 1}))
    build_report(copied, resamples=20, folder=tmp_path / "report")
    rows = list(csv.DictReader((tmp_path / "report" / "tables" / "rollout_agreement.csv").open()))
    assert {r["kind"] for r in rows} == {r["kind"] for r in first}
    for row in rows:
        assert (row["system"], row["rollouts K"], row["all K agree"]) == ("talker", "2", "1.0")
    index = (tmp_path / "report" / "index.html").read_text()
    assert "Rollout-to-rollout agreement" in index and ROLLOUTS_USED in html.unescape(index)


def test_a_run_under_conditions_names_them_and_plays_what_was_heard(
    run: Path, workdir: Path, tmp_path: Path
) -> None:
    """A run under a condition, reported against its clean twin.

    The run is copied and put under babble in its record, as ``pmc run --condition`` records
    it; talker's rollouts keep what they heard, and its turn end is answered 0.25 s later.
    """
    named = "babble-10db:snr_db=0"
    copy = tmp_path / "w"
    shutil.copytree(workdir, copy, ignore=shutil.ignore_patterns("report"))
    noisy = copy / run.relative_to(workdir)
    record = json.loads((noisy / "run.json").read_text())
    record["conditions"] = [c.to_dict() for c in parse_conditions(named, seed=1)]
    (noisy / "run.json").write_text(json.dumps(record))
    heard = {}
    for n, entry in enumerate(Run(noisy).rollouts(["talker"])):
        sf.write(entry.folder / HEARD_FILE, tone(0.1 * (n + 1)), SAMPLE_RATE, format="FLAC")
        heard[entry.point_id] = (entry.folder / HEARD_FILE).read_bytes()
    scores = noisy / SCORES_DIR / "talker.jsonl"
    lines = [json.loads(line) for line in scores.read_text().splitlines()]
    for line in lines:
        if line["kind"] == PointKind.TURN_END.value:
            line["reply"]["latency_s"] += 0.25
    scores.write_text("".join(io.json_line(line) for line in lines))
    folder = tmp_path / "report"
    build_report(noisy, compare=run, resamples=20, folder=folder)

    # Every table and figure title names the condition, in every file that holds titles.
    results = json.loads((folder / "results.json").read_text())
    assert [c["name"] for c in results["conditions"]] == ["babble-10db"]
    assert results["compare_conditions"] == []
    titles = [t["title"] for t in results["tables"]] + [f["title"] for f in results["figures"]]
    for name in ("report.md", "main_table.md"):
        titles += re.findall(r"^## (.*)$", (folder / name).read_text(), re.MULTILINE)
    assert len(titles) > 20
    for title in titles:
        assert named in title, title
    twin = [t for t in results["tables"] if t["key"] == "condition_comparison"]
    assert [t["title"] for t in twin] == [
        f"Condition: {named} (r) against clean (r), paired over points"
    ]
    rows = {(r[0], r[1]): r for r in twin[0]["rows"]}
    assert rows[("talker", "turn-end latency, s")][2:6] == [
        1,
        "0.30",
        "0.55",
        "+0.25 [+0.25, +0.25]",
    ]
    assert rows[("talker", "hold rate at pauses")][5:7] == ["+0.00 [+0.00, +0.00]", "0 of 1"]
    # Every page's title and heading name it too.
    pages = [folder / "index.html", *sorted((folder / "rollouts").rglob("*.html"))]
    assert len(pages) == 13
    for page in pages:
        head, body = page.read_text().split("</head>")
        for tag, part in (("title", head), ("h1", body)):  # the timeline's SVG has titles too
            (heading,) = re.findall(rf"<{tag}>(.*?)</{tag}>", part)
            assert heading.endswith(f" — under {named}"), (page, heading)
    # talker's pages play what it heard, copied beside the stereo file; flaky's kept none.
    for page in sorted((folder / "rollouts" / "talker").glob("*.html")):
        text = page.read_text()
        assert f"What the system heard (under {named})" in text
        (src,) = re.findall(
            r'<audio class="heard" controls preload="metadata" src="([^"]+)">', text
        )
        copied = (page.parent / unquote(src)).resolve()
        assert copied.parent == (folder / "audio" / "talker").resolve()
        assert copied.read_bytes() == heard[page.stem.rsplit("-", 1)[0]]
    for page in (folder / "rollouts" / "flaky").glob("*.html"):
        assert 'class="heard"' not in page.read_text()
