"""pmc.cpu: long scheduler slices for a computing process and what it starts.

And the default slice for a block of real-time work (and what it starts) inside it. Run in a
child process (under ``nice``), so that the test's own process keeps its slices.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys

from pmc.cpu import LONG_SLICE_NS

CHILD = """
import os, subprocess, sys
from pmc.cpu import default_slices, long_slices
def sched():
    return subprocess.run(["cat", "/proc/self/sched"], capture_output=True, text=True).stdout
granted = long_slices()
grandchild = sched()
with default_slices():
    inside = open("/proc/self/sched").read()
    started_inside = sched()
print(granted, os.getpriority(os.PRIO_PROCESS, 0))
for text in (open("/proc/self/sched").read(), grandchild, inside, started_inside):
    print(text)
"""


def _kernel() -> tuple[int, int]:
    found = re.match(r"(\d+)\.(\d+)", platform.release())
    assert found is not None
    return int(found[1]), int(found[2])


KNOWN_MACHINES = ("x86_64", "aarch64")
"""Where pmc.cpu knows the system call's number."""


def test_the_slice_is_granted_to_the_process_and_its_children_and_its_niceness_kept() -> None:
    expected_nice = min(19, os.getpriority(os.PRIO_PROCESS, 0) + 7)  # make test runs at 10 or 19
    out = subprocess.run(
        ["nice", "-n", "7", sys.executable, "-c", CHILD],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    first, _, sched = out.partition("\n")
    granted, nice = first.split()
    assert int(nice) == expected_nice  # a process may not lower its own niceness, nor did this
    slices = [int(s) for s in re.findall(r"se\.slice\s*:\s*(\d+)", sched)]
    linux = sys.platform.startswith("linux")
    if linux and _kernel() >= (6, 12) and platform.machine() in KNOWN_MACHINES:
        assert granted == "True"
        # the process's and its child's; then, in the block, the process's and its child's
        # on the default slice (the kernel's own, shorter); the process's long one again after
        default = slices[2]
        assert default < LONG_SLICE_NS
        assert slices == [LONG_SLICE_NS, LONG_SLICE_NS, default, default]
    else:  # an older kernel takes the request and ignores it; elsewhere nothing is asked
        assert granted in ("True", "False")
        assert all(s < LONG_SLICE_NS for s in slices)
