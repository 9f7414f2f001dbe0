"""Trade-off curves: hold rate at pauses against turn-end decision latency, per setting.

A local endpointer's settings are swept by replaying its decisions on the points, without
generating replies (docs/architecture.md "Trade-off curves").
"""

from pmc.curves._detector import DETECTOR_ADAPTERS, detector_sweep, is_detector
from pmc.curves._sweep import (
    DEFAULT_SILENCE_MS,
    SWEPT_ADAPTER,
    SWEPT_ADAPTERS,
    curve_path,
    decision_after,
    read_curves,
    sweep,
    took_pause,
    write_curve,
)
from pmc.curves._types import CURVE_SCHEMA_VERSION, CURVES_DIR, Curve, CurvePoint

__all__ = [
    "CURVES_DIR",
    "CURVE_SCHEMA_VERSION",
    "DEFAULT_SILENCE_MS",
    "DETECTOR_ADAPTERS",
    "SWEPT_ADAPTER",
    "SWEPT_ADAPTERS",
    "Curve",
    "CurvePoint",
    "curve_path",
    "decision_after",
    "detector_sweep",
    "is_detector",
    "read_curves",
    "sweep",
    "took_pause",
    "write_curve",
]
