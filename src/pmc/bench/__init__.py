"""Benchmarks: speed and timing figures reported by ``pmc bench``, never asserted in tests.

Like the CLI, this package sits above every stage and may use :mod:`pmc.testing`'s fakes: the
harness bench streams to the loopback fake of known latency (``_harness``), the cluster bench
spreads those streams over Ray processes (``_cluster``), the duplex bench times the duplex
server's step and drives it (``_duplex``), the curve bench times a sweep by replay against
running its settings as cards (``_curve``), the labels bench times the rule engine
(``_labels``), the scoring bench
scores a small run of the reference systems (``_score``), and ``_steadiness`` measures how
steadily the machine runs us, reported beside the harness figures; ``_usage`` counts CPU time.
"""

from pmc.bench._cluster import (
    ERROR_P99_BOUND_MS,
    LATENESS_P99_BOUND_MS,
    MAX_CONCURRENCY,
    PROCESSES,
    STEP,
    ClusterBenchRow,
    bench_cluster,
    holds,
    largest_held,
)
from pmc.bench._curve import CurveBench, bench_curve
from pmc.bench._duplex import DuplexBench, bench_duplex
from pmc.bench._harness import (
    CONCURRENCY,
    SPEECH_S,
    HarnessBenchRow,
    LevelResult,
    RolloutOutcome,
    bench_harness,
    summarise,
)
from pmc.bench._labels import LABELS_TARGET_MS, LabelsBench, bench_labels
from pmc.bench._score import ScoreBench, bench_score
from pmc.bench._steadiness import Steadiness, steadiness

__all__ = [
    "CONCURRENCY",
    "ERROR_P99_BOUND_MS",
    "LABELS_TARGET_MS",
    "LATENESS_P99_BOUND_MS",
    "MAX_CONCURRENCY",
    "PROCESSES",
    "SPEECH_S",
    "STEP",
    "ClusterBenchRow",
    "CurveBench",
    "DuplexBench",
    "HarnessBenchRow",
    "LabelsBench",
    "LevelResult",
    "RolloutOutcome",
    "ScoreBench",
    "Steadiness",
    "bench_cluster",
    "bench_curve",
    "bench_duplex",
    "bench_harness",
    "bench_labels",
    "bench_score",
    "holds",
    "largest_held",
    "steadiness",
    "summarise",
]
