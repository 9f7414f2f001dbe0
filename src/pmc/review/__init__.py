"""Human review: decisions on windows, re-annotated labels, and the engine measured against both.

Between the label stage and the points stage: the points stage leaves out the windows a reviewer
rejected. ``_types`` holds what a review records; ``_log`` the append-only per-reviewer logs;
``_standing`` where each window stands; ``_human`` a reviewer's labels; ``_truth`` the demo's
ground truth as a reviewer; ``_compare`` the comparison tables (paper Table 6); ``_stage`` the
files as a whole. The listening app is :mod:`pmc.review_app` (docs/review.md).
"""

from pmc.review._compare import (
    EngineVsHuman,
    cohen_kappa,
    engine_table,
    engine_vs_human,
    reviewers_table,
)
from pmc.review._human import (
    EditConflict,
    apply_edit,
    human_label,
    labels_sha256,
    read_human_labels,
    start_from,
    write_human_labels,
)
from pmc.review._log import LogRead, append, log_path, now_utc, read_log, review_dir, reviewers
from pmc.review._stage import (
    TruthImport,
    current_hashes,
    import_truth,
    review_tables,
    write_comparison,
)
from pmc.review._standing import is_stale, latest_window_decisions, window_reviews
from pmc.review._truth import TRUTH_REVIEWER, truth_decision
from pmc.review._types import (
    Decision,
    Entry,
    Reason,
    Target,
    Window,
    WindowKind,
    WindowReview,
    check_reviewer,
)

__all__ = [
    "TRUTH_REVIEWER",
    "Decision",
    "EditConflict",
    "EngineVsHuman",
    "Entry",
    "LogRead",
    "Reason",
    "Target",
    "TruthImport",
    "Window",
    "WindowKind",
    "WindowReview",
    "append",
    "apply_edit",
    "check_reviewer",
    "cohen_kappa",
    "current_hashes",
    "engine_table",
    "engine_vs_human",
    "human_label",
    "import_truth",
    "is_stale",
    "labels_sha256",
    "latest_window_decisions",
    "log_path",
    "now_utc",
    "read_human_labels",
    "read_log",
    "review_dir",
    "review_tables",
    "reviewers",
    "reviewers_table",
    "start_from",
    "truth_decision",
    "window_reviews",
    "write_comparison",
    "write_human_labels",
]
