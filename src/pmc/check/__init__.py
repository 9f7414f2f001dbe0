"""Check stage: a run's numbers against bounds and against a baseline run, for CI.

A checks file (``_spec``) names bounds on the main table's values and regressions against a
baseline run; ``_evaluate`` judges each on the run (regressions paired over points with a
bootstrap interval, as the context ablation pairs them), ``_stage`` reads the run or its
``results.json``, and ``_junit`` writes the verdicts as JUnit XML (docs/architecture.md
"Checks in CI").
"""

from pmc.check._evaluate import (
    CannotCheck,
    Change,
    CheckResult,
    Outcome,
    check_bounds,
    check_regressions,
)
from pmc.check._junit import junit_xml
from pmc.check._spec import (
    CHECKS_SCHEMA_VERSION,
    EVERY_SYSTEM,
    WORSE,
    Bound,
    Checks,
    Derived,
    Regression,
    Worse,
    bound_metrics,
    read_checks,
)
from pmc.check._stage import Subject, read_subject, run_checks

__all__ = [
    "CHECKS_SCHEMA_VERSION",
    "EVERY_SYSTEM",
    "WORSE",
    "Bound",
    "CannotCheck",
    "Change",
    "CheckResult",
    "Checks",
    "Derived",
    "Outcome",
    "Regression",
    "Subject",
    "Worse",
    "bound_metrics",
    "check_bounds",
    "check_regressions",
    "junit_xml",
    "read_checks",
    "read_subject",
    "run_checks",
]
