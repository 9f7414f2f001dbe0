"""Opening the HTML report in Debian's chromium through Playwright, for the report's tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest

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


@contextmanager
def chromium(what: str) -> Iterator[Any]:
    """Debian's chromium, headless, through Playwright; fails saying how to install it.

    Args:
        what: What is tested in it, for the message when chromium is missing.
    """
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: {what} is tested in Debian's chromium. Install it with "
            "`make chromium` (as root) or `sudo apt-get install -y chromium`."
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


_READY = """() => [...document.images].every(i => i.complete)
    && [...document.querySelectorAll('audio')].every(a => a.readyState >= 1 || a.error)"""

PERSON_SPEECH = """() => [...document.querySelectorAll('svg rect.person-speech')]
    .map(r => [parseFloat(r.dataset.start), parseFloat(r.dataset.end)])"""
"""The person's speech intervals a rollout page's timeline draws, in stream seconds."""

_STATE = """() => ({
    images: [...document.images].map(i => i.naturalWidth),
    audio: [...document.querySelectorAll('audio')]
        .map(a => [a.readyState, a.error && a.error.code]),
    injected: document.querySelectorAll('script, b, i, u, em, [onerror]').length,
    links: [...document.querySelectorAll('a[href]')].map(a => a.href),
    sources: [...document.querySelectorAll('[src]')].map(e => e.src),
    svgWords: [...document.querySelectorAll('svg text.word')].map(t => t.firstChild.nodeValue),
    humanReply: document.querySelectorAll('svg rect.human').length,
    personSpeech: (PERSON_SPEECH)(),
})""".replace("PERSON_SPEECH", PERSON_SPEECH)


def open_page(browser: Any, path: Path) -> tuple[str, dict[str, Any]]:
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
