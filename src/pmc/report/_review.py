"""The report's human-review section: present when a reviewer decided on any of the run's points.

It shows each reviewer's decisions on the run's windows, the engine's turns against every
re-annotation in the working directory (the paper's Table 6), and reviewers against each other.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pmc.errors import PmcError
from pmc.points import read_windows
from pmc.review import Target, current_hashes, read_log, review_tables
from pmc.table import Table

REVIEW_TABLE_PREFIX = "review_"
"""The keys of the review's tables start so; the HTML gives them a section of their own."""


def review_section(workdir: Path, point_ids: Iterable[str]) -> list[Table]:
    """The review's tables for a run's points, or none when no point of it was reviewed."""
    ids = set(point_ids)
    decided = {e.target_id for e in read_log(workdir).entries if e.target is Target.WINDOW}
    if not decided & ids:
        return []
    try:
        windows = read_windows(workdir)
    except PmcError:
        return []  # points from before windows were listed: nothing to check decisions against
    return review_tables(workdir, current_hashes(workdir, windows), sorted(ids))
