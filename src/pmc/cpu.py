"""Long scheduler slices for processes that only compute (docs/architecture.md "Metrics").

Linux's scheduler (EEVDF) shares a busy core among its runnable processes in slices of a few
milliseconds (1.4 ms on a 2-core machine). A process that only computes, switched out that often,
finds its caches filled by its neighbours' data each time it comes back: six processes scoring
the same clips on two cores each took 42% more CPU time than one alone (two at once, 9% more).
Since Linux 6.12 a process may ask for a longer slice (``sched_setattr``'s ``sched_runtime`` under
the normal policy, up to 100 ms); asked for by all six, the same work took 37 s instead of 46 s.
A process with the default slice still preempts a long-sliced one as soon as it wakes, so a
real-time stream beside them is served as promptly as before. Only speed changes, never a result.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
import sys
from collections.abc import Iterator
from contextlib import contextmanager

LONG_SLICE_NS = 100_000_000
"""The longest slice Linux grants a process under the normal policy (100 ms)."""

_SCHED_SETATTR = {"x86_64": 314, "aarch64": 274}
"""The ``sched_setattr`` system call's number where pmc knows it (glibc before 2.41 has no
wrapper for it)."""
_SCHED_ATTR = struct.Struct("=IIQiIQQQII")
"""``struct sched_attr``: size, policy, flags, nice, priority, runtime, deadline, period and the
two utilisation clamps."""
_SCHED_OTHER = 0


_asked_ns = 0
"""The slice this process asked for (0: the default)."""


def long_slices(slice_ns: int = LONG_SLICE_NS) -> bool:
    """Ask for ``slice_ns`` slices for this thread and what it starts; whether it was granted.

    For processes that only compute (scoring, calibration and demo-building workers), asked
    before they start their threads. Elsewhere (another system, an older kernel, which takes the
    request and ignores it, or an unknown machine) nothing changes.
    """
    global _asked_ns
    granted = _set_slice(slice_ns)
    if granted:
        _asked_ns = slice_ns
    return granted


@contextmanager
def default_slices() -> Iterator[None]:
    """The default slice for this thread, and what it starts, until the block ends.

    For real-time work (a stream, a server a test starts) in a process that asked for long
    slices: a wake-up on the default slice preempts the long-sliced work beside it.
    """
    asked = _asked_ns
    if asked:
        _set_slice(0)
    try:
        yield
    finally:
        if asked:
            _set_slice(asked)


def _set_slice(slice_ns: int) -> bool:
    """``sched_setattr`` for this thread: the normal policy, its niceness, ``slice_ns``.

    A slice of 0 is the scheduler's default.
    """
    number = _SCHED_SETATTR.get(platform.machine())
    if not sys.platform.startswith("linux") or number is None:
        return False
    nice = os.getpriority(os.PRIO_PROCESS, 0)  # kept: a process may not lower its own niceness
    attr = _SCHED_ATTR.pack(_SCHED_ATTR.size, _SCHED_OTHER, 0, nice, 0, slice_ns, 0, 0, 0, 0)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        buffer = ctypes.create_string_buffer(attr, len(attr))
        return int(libc.syscall(number, 0, buffer, 0)) == 0
    except (OSError, AttributeError):
        return False


__all__ = ["LONG_SLICE_NS", "default_slices", "long_slices"]
