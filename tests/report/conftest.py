"""The report's shared fixture: one headless chromium for every test that opens the report."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.report.browser import CHROMIUM, CHROMIUM_ARGS


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's chromium, headless, through Playwright.

    Per module, and asked for after the fixtures that run rollouts: Playwright's synchronous
    API keeps an event loop running in the thread, where ``asyncio.run`` then refuses to start.
    """
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
