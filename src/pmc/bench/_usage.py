"""CPU accounting for the benches: this process's, another process's, the whole machine's."""

from __future__ import annotations

import math
import os


def own_usage() -> tuple[float, int]:
    """CPU seconds this process has used, and how often the OS preempted it (Unix only)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return 0.0, 0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime, usage.ru_nivcsw


def process_cpu_s(pid: int) -> float:
    """CPU seconds process ``pid`` has used (Linux ``/proc``; NaN elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return math.nan
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def machine_ticks() -> tuple[int, int]:
    """Busy and total CPU ticks of the whole machine so far (``/proc/stat``; zeros elsewhere)."""
    try:
        with open("/proc/stat") as stat:
            ticks = [int(x) for x in stat.readline().split()[1:]]
    except OSError:
        return 0, 0
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle, iowait
    return sum(ticks) - idle, sum(ticks)
