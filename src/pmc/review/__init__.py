"""Human review: decisions on windows, re-annotated labels, and the engine measured against both.

Between the label stage and the points stage: the points stage leaves out the windows a reviewer
rejected. ``_types`` holds what a review records; ``_log`` the append-only per-reviewer logs;
``_verdicts`` where each window stands; ``_human`` a reviewer's labels; ``_truth`` the demo's
ground truth as a reviewer; ``_compare`` the comparison tables (paper Table 6); ``_stage`` the
files as a whole. The listening app is :mod:`pmc.review_app` (docs/review.md).
"""

from pmc.review._compare import (
    AGREEMENT_THRESHOLDS_S,
    MATCH_SHARE,
    MOVE_THRESHOLDS_S,
    EngineVsHuman,
    best_match,
    cohen_kappa,
    decisions_table,
    engine_table,
    engine_vs_human,
    reviewers_table,
)
from pmc.review._human import (
    EditConflict,
    all_human_labels,
    apply_edit,
    human_label,
    human_labels_dir,
    human_labels_path,
    human_reviewers,
    labels_sha256,
    read_human_labels,
    start_from,
    write_human_labels,
)
from pmc.review._log import LogRead, append, log_path, now_utc, read_log, review_dir, reviewers
from pmc.review._stage import (
    TruthImport,
    current_hashes,
    engine_labels,
    import_truth,
    review_tables,
    write_comparison,
)
from pmc.review._truth import TRUTH_REVIEWER, truth_labels, truth_verdict
from pmc.review._types import (
    EDITS,
    WINDOW_DECISIONS,
    Decision,
    Entry,
    Reason,
    Target,
    Window,
    WindowKind,
    WindowReview,
    check_reviewer,
)
from pmc.review._verdicts import is_stale, latest_window_decisions, window_reviews

__all__ = [
    "AGREEMENT_THRESHOLDS_S",
    "EDITS",
    "MATCH_SHARE",
    "MOVE_THRESHOLDS_S",
    "TRUTH_REVIEWER",
    "WINDOW_DECISIONS",
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
    "all_human_labels",
    "append",
    "apply_edit",
    "best_match",
    "check_reviewer",
    "cohen_kappa",
    "current_hashes",
    "decisions_table",
    "engine_labels",
    "engine_table",
    "engine_vs_human",
    "human_label",
    "human_labels_dir",
    "human_labels_path",
    "human_reviewers",
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
    "truth_labels",
    "truth_verdict",
    "window_reviews",
    "write_comparison",
    "write_human_labels",
]
