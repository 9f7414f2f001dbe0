"""The whole pipeline in one call: corpus, labels, selection, points, rollouts, scores, report.

``run_demo_pipeline`` is what ``pmc demo`` runs, on the bundled demo corpus (its first step,
``import_demo``, is ``pmc corpus import demo``); a notebook or a script runs it the same way
(``pmc.run_demo_pipeline``), hearing of each stage through :class:`PipelineHooks` if it wants.
"""

from pmc.pipeline._demo import (
    DEMO_CUTOFF,
    PipelineHooks,
    Progress,
    Stage,
    demo_run_id,
    import_demo,
    run_demo_pipeline,
)

__all__ = [
    "DEMO_CUTOFF",
    "PipelineHooks",
    "Progress",
    "Stage",
    "demo_run_id",
    "import_demo",
    "run_demo_pipeline",
]
