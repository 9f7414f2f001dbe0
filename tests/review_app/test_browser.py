"""The review app in chromium: playing, deciding, re-annotating, stale decisions, escaping.

Every page is opened under the server's Content-Security-Policy and must stay free of console
errors. ``wait_for_function`` is always given a function (``"() => ..."``): Playwright evaluates
it once and then calls it, where a bare expression would be ``eval``-ed on every poll, which the
policy forbids.
"""

from __future__ import annotations

import dataclasses
import json
import re
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from pmc import io
from pmc.labels import Label, LabelKind, read_labels
from pmc.review_app import ReviewServer
from tests.review_app.conftest import MARKUP

TIMEOUT_MS = 10_000
CID = "V00_S0001_I00000001"
"""The first conversation: its first word is the markup."""

expect.set_options(timeout=TIMEOUT_MS)


# -- helpers -----------------------------------------------------------------------------------


@contextmanager
def serving(workdir: Path, reviewer: str = "alice") -> Iterator[ReviewServer]:
    """The app for one reviewer on a free port, closed afterwards."""
    server = ReviewServer(workdir, reviewer, port=0, candidates=True).start()
    try:
        yield server
    finally:
        server.close()


@contextmanager
def opened(
    browser: Browser, server: ReviewServer, route: str = "", allowed: tuple[str, ...] = ()
) -> Iterator[Page]:
    """A page of the app at 1280×800; on leaving, no console error, page error or dialog.

    Args:
        browser: The module's chromium.
        server: The app to open.
        route: The hash to open it at ("" for the first window).
        allowed: Parts of console errors a test expects (chromium logs every 409 response).
    """
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.set_default_timeout(TIMEOUT_MS)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))

    def on_dialog(dialog: Any) -> None:
        problems.append(f"dialog: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", on_dialog)
    try:
        page.goto(server.url + route)
        yield page
    finally:
        page.close()
    unexpected = [p for p in problems if not any(a in p for a in allowed)]
    assert unexpected == [], f"the page logged errors: {unexpected}"


def wait_view(page: Page, view: str, id_: str) -> None:
    """Until the page finished rendering a window or a conversation."""
    selector = f'body[data-ready="1"][data-view="{view}"][data-id="{id_}"]'
    page.wait_for_selector(selector, state="attached")


def api(server: ReviewServer, path: str, body: dict[str, Any] | None = None) -> Any:
    """The app's JSON API, from the test's side."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"} if body is not None else {}
    request = urllib.request.Request(server.url + path.lstrip("/"), data=data, headers=headers)
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def window_ids(server: ReviewServer) -> list[str]:
    return [w["window_id"] for w in api(server, "api/state")["windows"]]


def log(workdir: Path, reviewer: str) -> list[dict[str, Any]]:
    """A reviewer's log, line by line."""
    path = workdir / "review" / f"{reviewer}.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def engine_label(workdir: Path, cid: str, label_id: str) -> Label:
    labels = read_labels(workdir / "labels" / f"{cid}.json")
    return next(x for x in labels.labels if x.id == label_id)


def first_turn(workdir: Path, cid: str = CID) -> Label:
    """A's first turn in the engine's labels (0.5 s to about 5.9 s)."""
    labels = read_labels(workdir / "labels" / f"{cid}.json")
    return next(x for x in labels.labels if x.kind is LabelKind.TURN and x.speaker == "A")


def item(page: Page, window_id: str) -> Any:
    return page.locator(f'#window-list li[data-window-id="{window_id}"]')


def rect_geometry(page: Page, label_id: str) -> dict[str, float]:
    """A label's rect on the timeline, and the timeline's scale."""
    result: dict[str, float] = page.evaluate(
        """(id) => {
            const svg = document.getElementById('timeline');
            const rect = svg.querySelector(`rect.label[data-label-id="${id}"]`);
            return {
                start: parseFloat(rect.dataset.start), end: parseFloat(rect.dataset.end),
                x: parseFloat(rect.getAttribute('x')),
                width: parseFloat(rect.getAttribute('width')),
                pxPerS: parseFloat(svg.dataset.pxPerS), x0: parseFloat(svg.dataset.x0),
                t0: parseFloat(svg.dataset.t0),
            };
        }""",
        label_id,
    )
    return result


def script_count(page: Page) -> int:
    count: int = page.evaluate("() => document.querySelectorAll('script').length")
    return count


def replayed_from(page: Page, at: float) -> float:
    """Where ``r`` moves the paused player to from ``at`` seconds; waits until it plays again."""
    page.evaluate(
        "(at) => { const a = document.getElementById('player'); a.pause(); a.currentTime = at; }",
        at,
    )
    page.wait_for_function(
        """(at) => { const a = document.getElementById('player');
            return a.paused && !a.seeking && Math.abs(a.currentTime - at) < 1e-6; }""",
        arg=at,
    )
    page.evaluate(
        """() => { const a = document.getElementById('player'); window.seeks = [];
            const record = () => window.seeks.push(a.currentTime);
            a.addEventListener('seeking', record, {once: true}); }"""
    )
    page.keyboard.press("r")
    page.wait_for_function(
        "() => window.seeks.length > 0 && !document.getElementById('player').paused"
    )
    seek: float = page.evaluate("() => window.seeks[0]")
    return seek


PLAYER = """() => {
    const a = document.getElementById('player');
    return {src: a.currentSrc, ready: a.readyState, error: a.error && a.error.code,
            time: a.currentTime, paused: a.paused};
}"""

PLAYHEAD = """() => {
    const svg = document.getElementById('timeline');
    const line = svg.querySelector('line.playhead');
    const a = document.getElementById('player');
    return {x: parseFloat(line.getAttribute('x1')), time: a.currentTime,
            pxPerS: parseFloat(svg.dataset.pxPerS), x0: parseFloat(svg.dataset.x0),
            t0: parseFloat(svg.dataset.t0)};
}"""


PLAYHEAD_SETTLED = """() => {
    const svg = document.getElementById('timeline');
    const line = svg.querySelector('line.playhead');
    const a = document.getElementById('player');
    const x = parseFloat(svg.dataset.x0) + a.currentTime * parseFloat(svg.dataset.pxPerS);
    return a.paused && Math.abs(parseFloat(line.getAttribute('x1')) - x) < 1.0;
}"""
"""The player is paused and the playhead drawn where its time is (within a pixel)."""


# -- window mode -------------------------------------------------------------------------------


def test_the_page_lists_every_window_and_plays_its_stereo_clip(
    browser: Browser, pristine: Path
) -> None:
    with serving(pristine) as server, opened(browser, server) as page:
        state = api(server, "api/state")
        ids = [w["window_id"] for w in state["windows"]]
        assert len(ids) == 8, "the review workdir has 8 windows (2 pauses, 6 turn ends)"
        wait_view(page, "window", ids[0])
        assert page.url.endswith(f"#/window/{ids[0]}"), "an empty hash opens the first window"

        listed = page.eval_on_selector_all(
            "#window-list li[data-window-id][data-status]",
            "items => items.map(i => [i.dataset.windowId, i.dataset.status])",
        )
        assert listed == [[i, "undecided"] for i in ids]
        conversations = page.eval_on_selector_all(
            "#conversation-list li[data-conversation-id]",
            "items => items.map(i => i.dataset.conversationId)",
        )
        assert conversations == [c["conversation_id"] for c in state["conversations"]]

        # The boundary is drawn where the window says, on the timeline's own scale.
        first = state["windows"][0]
        boundary = page.evaluate(
            """() => {
                const svg = document.getElementById('timeline');
                const line = svg.querySelector('line.boundary');
                return {x: parseFloat(line.getAttribute('x1')), t: parseFloat(line.dataset.t),
                        pxPerS: parseFloat(svg.dataset.pxPerS),
                        x0: parseFloat(svg.dataset.x0), t0: parseFloat(svg.dataset.t0)};
            }"""
        )
        assert boundary["t"] == first["boundary_conv_s"]
        expected_x = boundary["x0"] + (boundary["t"] - boundary["t0"]) * boundary["pxPerS"]
        assert abs(boundary["x"] - expected_x) < 0.5, boundary

        page.wait_for_function(
            "() => { const a = document.getElementById('player');"
            " return a.readyState >= 1 || a.error !== null; }"
        )
        audio = page.evaluate(PLAYER)
        assert audio["error"] is None, f"the clip did not load: {audio}"
        assert audio["ready"] >= 1
        assert audio["src"] == f"{server.url}audio/window/{ids[0]}.wav"
        with urllib.request.urlopen(audio["src"], timeout=10) as response:
            header = response.read(44)
        assert int.from_bytes(header[22:24], "little") == 2, "the clip is stereo"
        assert int.from_bytes(header[24:28], "little") == 24_000

        page.keyboard.press("Space")
        page.wait_for_function("() => document.getElementById('player').currentTime > 0.2")
        page.keyboard.press("Space")
        # ``paused`` turns true at once; the pause and timeupdate events that redraw the playhead
        # come in a task after it (later on a loaded machine): wait for the redraw, not a time.
        page.wait_for_function(PLAYHEAD_SETTLED)
        # The timeline starts where the clip does, so the player's time maps straight onto it.
        playhead = page.evaluate(PLAYHEAD)
        assert playhead["t0"] == api(server, f"api/window/{ids[0]}")["clip"]["start_conv_s"]
        expected_x = playhead["x0"] + playhead["time"] * playhead["pxPerS"]
        assert abs(playhead["x"] - expected_x) < 1.0, f"the playhead does not follow: {playhead}"

        # r replays the last 3 s and plays: from 5 s, from 2 s; from 1 s, from 0 (clamped).
        for at, expected in ((5.0, 2.0), (1.0, 0.0)):
            assert replayed_from(page, at) == pytest.approx(expected, abs=1e-3)


def test_accept_by_key_and_reject_by_click_are_logged(browser: Browser, workdir: Path) -> None:
    with serving(workdir) as server, opened(browser, server) as page:
        state = api(server, "api/state")
        first, second = state["windows"][0], state["windows"][1]
        wait_view(page, "window", first["window_id"])

        page.keyboard.press("a")
        expect(item(page, first["window_id"])).to_have_attribute("data-status", "accepted")
        expect(page.locator("#status")).to_contain_text("Accepted")
        sha = engine_label(workdir, first["conversation_id"], first["label_id"]).content_sha256()
        [accepted] = log(workdir, "alice")
        assert accepted["decision"] == "accept"
        assert accepted["target_id"] == first["window_id"]
        assert accepted["label_id"] == first["label_id"]
        assert accepted["label_sha256"] == sha
        assert accepted["reason"] is None

        page.keyboard.press("n")
        wait_view(page, "window", second["window_id"])
        # Typing a note holds the shortcut letters a, n and p; none of them may act.
        note = "a plan, then a pause"
        page.locator("#note").press_sequentially(note)
        expect(page.locator("#note")).to_have_value(note)
        assert page.evaluate("() => document.body.dataset.id") == second["window_id"]
        assert len(log(workdir, "alice")) == 1, "a key typed into the note made a decision"

        page.click('button.reject[data-reason="listener spoke"]')
        expect(item(page, second["window_id"])).to_have_attribute("data-status", "rejected")
        expect(item(page, second["window_id"])).to_contain_text("rejected (listener spoke)")
        expect(page.locator("#status")).to_contain_text("Rejected")
        first_line, rejected = log(workdir, "alice")
        assert first_line == accepted, "the log is append-only"
        sha = engine_label(workdir, second["conversation_id"], second["label_id"]).content_sha256()
        assert rejected["decision"] == "reject"
        assert rejected["reason"] == "listener spoke"
        assert rejected["note"] == note
        assert rejected["target_id"] == second["window_id"]
        assert rejected["label_sha256"] == sha
        expect(item(page, first["window_id"])).to_have_attribute("data-status", "accepted")

        page.keyboard.press("p")
        wait_view(page, "window", first["window_id"])
        expect(page.locator("#accept")).to_have_attribute("aria-pressed", "true")


def test_two_reviewers_keep_separate_logs(browser: Browser, workdir: Path) -> None:
    with serving(workdir, "alice") as alice, serving(workdir, "bob") as bob:
        window_id = window_ids(alice)[0]
        route = f"#/window/{window_id}"
        with opened(browser, alice, route) as alice_page, opened(browser, bob, route) as bob_page:
            wait_view(alice_page, "window", window_id)
            wait_view(bob_page, "window", window_id)
            alice_page.keyboard.press("a")
            expect(item(alice_page, window_id)).to_have_attribute("data-status", "accepted")
            bob_page.click('button.reject[data-reason="unclear audio"]')
            expect(item(bob_page, window_id)).to_have_attribute("data-status", "rejected")

            [alice_line] = log(workdir, "alice")
            [bob_line] = log(workdir, "bob")
            assert (alice_line["reviewer"], alice_line["decision"]) == ("alice", "accept")
            assert (bob_line["reviewer"], bob_line["decision"]) == ("bob", "reject")
            assert bob_line["reason"] == "unclear audio"
            assert alice_line["target_id"] == bob_line["target_id"] == window_id

            # Each page, reloaded, shows its own reviewer's decision.
            for page, status, text in (
                (alice_page, "accepted", "accepted"),
                (bob_page, "rejected", "rejected (unclear audio)"),
            ):
                page.reload()
                wait_view(page, "window", window_id)
                expect(item(page, window_id)).to_have_attribute("data-status", status)
                expect(item(page, window_id)).to_contain_text(text)
            expect(alice_page.locator("#reviewer")).to_have_text("reviewer: alice")
            expect(bob_page.locator("#reviewer")).to_have_text("reviewer: bob")


def test_a_label_changed_after_a_decision_shows_the_decision_stale(
    browser: Browser, workdir: Path
) -> None:
    with serving(workdir) as server, opened(browser, server) as page:
        window = api(server, "api/state")["windows"][0]
        wait_view(page, "window", window["window_id"])
        page.keyboard.press("a")
        expect(item(page, window["window_id"])).to_have_attribute("data-status", "accepted")
        expect(page.locator("#stale-notice")).to_be_hidden()
        logged = (workdir / "review" / "alice.jsonl").read_bytes()

        path = workdir / "labels" / f"{window['conversation_id']}.json"
        labels = read_labels(path)
        changed = tuple(
            dataclasses.replace(x, confidence=0.123) if x.id == window["label_id"] else x
            for x in labels.labels
        )
        assert changed != labels.labels
        io.write_json(path, dataclasses.replace(labels, labels=changed).to_dict())

        page.reload()
        wait_view(page, "window", window["window_id"])
        listed = item(page, window["window_id"])
        expect(listed).to_have_attribute("data-status", "stale")
        expect(listed).to_have_class(re.compile(r"\bstale\b"))
        expect(listed).not_to_contain_text("accepted")
        expect(page.locator("#stale-notice")).to_be_visible()
        expect(page.locator("#stale-notice")).to_contain_text("earlier version of this label")
        expect(page.locator("#decision-now")).not_to_contain_text("accepted")
        expect(page.locator("#accept")).to_have_attribute("aria-pressed", "false")
        assert (workdir / "review" / "alice.jsonl").read_bytes() == logged, "the log changed"

        # Deciding again appends a decision on the label as it is now.
        page.keyboard.press("a")
        expect(listed).to_have_attribute("data-status", "accepted")
        expect(page.locator("#stale-notice")).to_be_hidden()
        old, new = log(workdir, "alice")
        assert (workdir / "review" / "alice.jsonl").read_bytes().startswith(logged)
        assert new["label_sha256"] != old["label_sha256"]
        label = engine_label(workdir, window["conversation_id"], window["label_id"])
        assert new["label_sha256"] == label.content_sha256()


def test_unreadable_log_lines_are_shown(browser: Browser, workdir: Path) -> None:
    path = workdir / "review" / "alice.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text('{"not": "a decision"}\n', encoding="utf-8")
    with serving(workdir) as server, opened(browser, server) as page:
        wait_view(page, "window", window_ids(server)[0])
        message = page.locator("#message")
        expect(message).to_be_visible()
        expect(message).to_contain_text("alice.jsonl: line 1: not a review decision")


# -- conversation mode -------------------------------------------------------------------------


def test_dragging_a_turn_end_moves_it_and_survives_a_reload(
    browser: Browser, workdir: Path
) -> None:
    turn = first_turn(workdir)
    with serving(workdir) as server, opened(browser, server, f"#/conversation/{CID}") as page:
        wait_view(page, "conversation", CID)
        page.click(f'rect.label[data-label-id="{turn.id}"]')
        expect(page.locator("#editor")).to_be_visible()
        expect(page.locator("#edit-end")).to_have_value(f"{turn.end_conv_s:.3f}")
        before = rect_geometry(page, turn.id)
        handle = page.locator(f'rect.handle[data-edge="end"][data-label-id="{turn.id}"]')
        box = handle.bounding_box()
        assert box is not None
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        dx = 40
        page.mouse.move(x, y)
        page.mouse.down()
        page.mouse.move(x + dx / 2, y, steps=3)
        page.mouse.move(x + dx, y, steps=3)
        page.mouse.up()
        expect(page.locator("#status")).to_contain_text("Moved the end")

        px_s = 1 / before["pxPerS"]
        expected = turn.end_conv_s + dx * px_s
        saved = read_labels(workdir / "review" / "labels" / "alice" / f"{CID}.json")
        moved = next(x for x in saved.labels if x.kind is LabelKind.TURN and x.speaker == "A")
        assert moved.start_conv_s == turn.start_conv_s
        assert abs(moved.end_conv_s - expected) <= px_s, (moved.end_conv_s, expected)
        assert moved.rule.name == "REVIEWER"
        [edit] = log(workdir, "alice")
        assert (edit["decision"], edit["label_id"]) == ("move", turn.id)
        assert edit["label_sha256"] == turn.content_sha256()
        selected = page.locator(f'rect.label[data-label-id="{moved.id}"]')
        expect(selected).to_have_class(re.compile(r"\bselected\b"))

        page.reload()
        wait_view(page, "conversation", CID)
        after = rect_geometry(page, moved.id)
        assert after["end"] == moved.end_conv_s
        assert after["start"] == turn.start_conv_s
        right_edge = after["x0"] + (moved.end_conv_s - after["t0"]) * after["pxPerS"]
        assert abs(after["x"] - before["x"]) < 0.5, "the start moved"
        assert abs(after["x"] + after["width"] - right_edge) < 0.5, after
        assert abs(after["width"] - before["width"] - dx) <= 1.0, (before, after)
        expect(
            page.locator(f'#conversation-list li[data-conversation-id="{CID}"]')
        ).to_have_attribute("data-started", "1")


def test_save_with_a_new_kind_and_end_sends_a_move_then_a_relabel(
    browser: Browser, workdir: Path
) -> None:
    turn = first_turn(workdir)
    with serving(workdir) as server, opened(browser, server, f"#/conversation/{CID}") as page:
        wait_view(page, "conversation", CID)
        page.click(f'rect.label[data-label-id="{turn.id}"]')
        page.select_option("#edit-kind", "backchannel")
        page.fill("#edit-end", "5.5")
        page.click("#edit-save")
        expect(page.locator("#status")).to_contain_text("Saved move and relabel")
        move, relabel = log(workdir, "alice")
        assert (move["decision"], move["label_id"]) == ("move", turn.id)
        assert move["label"]["kind"] == "turn" and move["label"]["end_conv_s"] == 5.5
        assert relabel["decision"] == "relabel"
        assert relabel["label_id"] == move["label"]["id"], "the relabel names the moved label"
        moved = Label.from_dict(move["label"])
        assert relabel["label_sha256"] == moved.content_sha256()
        assert relabel["label"]["kind"] == "backchannel"
        assert relabel["label"]["end_conv_s"] == 5.5
        new = page.locator('rect.label[data-kind="backchannel"]')
        expect(new).to_have_count(1)
        expect(new).to_have_attribute("data-end", "5.5")
        expect(new).to_have_attribute("data-label-id", relabel["label"]["id"])
        expect(page.locator("#edit-kind")).to_have_value("backchannel")

        # An end of turn added at the playhead: an instant at the player's time.
        page.evaluate("() => { document.getElementById('player').currentTime = 2.25; }")
        page.wait_for_function("() => document.getElementById('player').currentTime === 2.25")
        page.select_option("#add-kind", "end_of_turn")
        page.select_option("#add-speaker", "B")
        page.click("#add-label")
        expect(page.locator("#status")).to_contain_text("Added end of turn at 2.250 s")
        added = log(workdir, "alice")[-1]
        assert added["decision"] == "add"
        assert added["label"]["speaker"] == "B"
        assert added["label"]["start_conv_s"] == added["label"]["end_conv_s"] == 2.25
        rect = page.locator(f'rect.label[data-label-id="{added["label"]["id"]}"]')
        expect(rect).to_have_attribute("data-kind", "end_of_turn")

        page.click("#edit-delete")
        expect(rect).to_have_count(0)
        assert log(workdir, "alice")[-1]["decision"] == "delete"

        # The engine's labels change under the re-annotation: the page says so, showing mine.
        expect(page.locator("#engine-notice")).to_be_hidden()
        path = workdir / "labels" / f"{CID}.json"
        labels = read_labels(path)
        io.write_json(path, dataclasses.replace(labels, labels=labels.labels[1:]).to_dict())
        page.reload()
        wait_view(page, "conversation", CID)
        expect(page.locator("#engine-notice")).to_be_visible()
        expect(page.locator('rect.label[data-kind="backchannel"]')).to_have_count(1)


def test_a_conflicting_edit_is_shown_and_the_conversation_reloaded(
    browser: Browser, workdir: Path
) -> None:
    turn = first_turn(workdir)
    route = f"#/conversation/{CID}"
    with serving(workdir) as server, opened(browser, server, route, ("409",)) as page:
        wait_view(page, "conversation", CID)
        page.click(f'rect.label[data-label-id="{turn.id}"]')
        # Another tab moves the same turn's end first.
        elsewhere = dict(turn.to_dict(), start_conv_s=turn.start_conv_s, end_conv_s=4.0)
        api(
            server,
            f"api/conversation/{CID}/edit",
            {
                "decision": "move",
                "label_id": turn.id,
                "label_sha256": turn.content_sha256(),
                "label": elsewhere,
                "note": "",
            },
        )
        page.fill("#edit-end", "5.0")
        page.click("#edit-save")
        expect(page.locator("#message")).to_be_visible()
        expect(page.locator("#message")).to_contain_text("Conflict")
        expect(page.locator("#status")).to_contain_text("Not saved")
        shown = page.locator(f'rect.label[data-label-id="{turn.id}"]')
        expect(shown).to_have_attribute("data-end", "4")
        assert [e["label"]["end_conv_s"] for e in log(workdir, "alice")] == [4.0], "retried"


# -- escaping ----------------------------------------------------------------------------------


def test_markup_in_transcripts_stays_text(browser: Browser, pristine: Path) -> None:
    with serving(pristine) as server:
        holding = [
            w
            for w in window_ids(server)
            if any(x["text"] == MARKUP for x in api(server, f"api/window/{w}")["words"])
        ]
        assert holding, "no window's context holds the markup word"
        with opened(browser, server, f"#/window/{holding[0]}") as page:
            wait_view(page, "window", holding[0])
            word = page.locator("svg#timeline text.word").filter(has_text=MARKUP)
            expect(word).to_have_count(1)
            expect(word).to_be_visible()
            expect(word).to_have_text(MARKUP)
            assert script_count(page) == 1

            page.goto(f"{server.url}#/conversation/{CID}")
            wait_view(page, "conversation", CID)
            expect(page.locator("svg#timeline text.word").filter(has_text=MARKUP)).to_have_text(
                MARKUP
            )
            turn = page.locator('rect.label[data-kind="turn"][data-speaker="A"]').first
            expect(turn.locator("title")).to_contain_text(MARKUP)
            turn.click()
            expect(page.locator("#edit-text")).to_have_value(
                f"{MARKUP} a1 a2 a3 a4 a5 a6 a7 b0 b1 b2 b3"
            )
            assert script_count(page) == 1


def test_the_static_files_build_no_markup_and_inline_nothing() -> None:
    """The rules the policy and the escaping rest on, checked in the source itself."""
    static = resources.files("pmc.review_app") / "static"
    script = (static / "app.js").read_text(encoding="utf-8")
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in script, f"app.js uses {sink}"
    assert "new Function" not in script
    assert not re.search(r"setAttribute\(\s*[\"']style|\.style\b", script), "app.js styles inline"
    page = (static / "index.html").read_text(encoding="utf-8")
    assert re.findall(r"<script\b[^>]*>", page) == ['<script src="/static/app.js" defer>']
    assert "<style" not in page and " style=" not in page, "index.html styles inline"
    assert not re.search(r"\son[a-z]+=", page), "index.html has an inline event handler"
    assert not re.search(r"(src|href)=\"(https?:)?//", page), "index.html loads from elsewhere"


def test_every_label_kind_has_a_lane_and_a_colour() -> None:
    """A new kind of label (rule 5's barge-ins, say) is drawn in a lane, in a colour of its own."""
    static = resources.files("pmc.review_app") / "static"
    script = (static / "app.js").read_text(encoding="utf-8")
    style = (static / "app.css").read_text(encoding="utf-8")
    lanes = re.search(r"const LANES = \[(.*?)\];", script, re.S)
    assert lanes is not None
    listed = [
        kind
        for kinds in re.findall(r"kinds: \[(.*?)\]", lanes.group(1))
        for kind in re.findall(r'"([a-z_]+)"', kinds)
    ]
    assert sorted(listed) == sorted(k.value for k in LabelKind)  # each kind in one lane
    for kind in LabelKind:
        assert f"rect.label.kind-{kind.value} {{" in style, kind
