"""Points stage: the moments every system is put at (paper section 3.3)."""

from pmc.points._files import MANIFEST_FILE, points_dir, read_points, read_windows
from pmc.points._funnel import DEFAULT_DRAW, Funnel
from pmc.points._stage import run_points
from pmc.points._types import POINT_SCHEMA_VERSION, JudgeVerdict, Point, PointKind, point_id

__all__ = [
    "DEFAULT_DRAW",
    "MANIFEST_FILE",
    "POINT_SCHEMA_VERSION",
    "Funnel",
    "JudgeVerdict",
    "Point",
    "PointKind",
    "point_id",
    "points_dir",
    "read_points",
    "read_windows",
    "run_points",
]
