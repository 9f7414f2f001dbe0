"""The review app's fixtures: one headless chromium and one review working directory per module."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, sync_playwright

from tests.conftest import REVIEW_MARKUP
from tests.report.browser import CHROMIUM, CHROMIUM_ARGS

MARKUP = REVIEW_MARKUP
"""The first word of the first conversation: every test also shows it stays text."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's chromium, headless, through Playwright."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: the review app is tested in Debian's chromium. Install it "
            "with `make chromium` (as root) or `sudo apt-get install -y chromium`."
        )
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def pristine(review_built: Path) -> Path:
    """Two labelled conversations with their windows (the session's); tests that write copy it."""
    return review_built


@pytest.fixture
def workdir(pristine: Path, tmp_path: Path) -> Path:
    """A copy of the pristine working directory for one test to write in (its audio is shared)."""
    return Path(shutil.copytree(pristine, tmp_path / "w"))
