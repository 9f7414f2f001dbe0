"""The whole pipeline in one call: corpus, labels, selection, points, rollouts, scores, report.

``run_demo_pipeline`` is what ``pmc demo`` runs, on the bundled demo corpus; a notebook or a
script runs it the same way (``pmc.run_demo_pipeline``), hearing of each stage through
:class:`PipelineHooks` if it wants to.
"""

from pmc.pipeline._demo import (
    DEMO_ASR,
    DEMO_CUTOFF,
    DEMO_RUN,
    PipelineHooks,
    Progress,
    Stage,
    demo_run_id,
    run_demo_pipeline,
)

__all__ = [
    "DEMO_ASR",
    "DEMO_CUTOFF",
    "DEMO_RUN",
    "PipelineHooks",
    "Progress",
    "Stage",
    "demo_run_id",
    "run_demo_pipeline",
]
