"""The review app's fixtures: one headless chromium and one review working directory per module."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from tests.conftest import REVIEW_MARKUP
from tests.report.browser import chromium

MARKUP = REVIEW_MARKUP
"""The first word of the first conversation: every test also shows it stays text."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's chromium, headless, through Playwright."""
    with chromium("the review app") as launched:
        yield launched


@pytest.fixture(scope="module")
def pristine(review_built: Path) -> Path:
    """Two labelled conversations with their windows (the session's); tests that write copy it."""
    return review_built


@pytest.fixture
def workdir(pristine: Path, tmp_path: Path) -> Path:
    """A copy of the pristine working directory for one test to write in (its audio is shared)."""
    return Path(shutil.copytree(pristine, tmp_path / "w"))
