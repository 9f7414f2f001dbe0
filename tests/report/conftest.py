"""The report's shared fixture: one headless chromium for every test that opens the report."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.report.browser import chromium


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's chromium, headless, through Playwright.

    Per module, and asked for after the fixtures that run rollouts: Playwright's synchronous
    API keeps an event loop running in the thread, where ``asyncio.run`` then refuses to start.
    """
    with chromium("the HTML report") as launched:
        yield launched
