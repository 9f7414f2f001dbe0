"""Precise monotonic deadlines for the fakes, which send on a schedule."""

from __future__ import annotations

import asyncio
import time

from pmc.clock import NS_PER_S


async def sleep_until(deadline_ns: int) -> None:
    """Sleep to a monotonic deadline, spinning its last half millisecond for precision."""
    while True:
        left = deadline_ns - time.monotonic_ns()
        if left <= 0:
            return
        await asyncio.sleep(max(0.0, (left - 500_000) / NS_PER_S) if left > 500_000 else 0)
