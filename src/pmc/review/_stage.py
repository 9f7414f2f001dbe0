"""The review's files as a whole: the comparison tables, and the ground truth as a reviewer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pmc import io
from pmc.demo import GROUND_TRUTH_DIR, read_ground_truth
from pmc.errors import InputError, PmcError
from pmc.labels import Labels, labels_dir, read_labels
from pmc.review._compare import decisions_table, engine_table, engine_vs_human, reviewers_table
from pmc.review._human import all_human_labels, human_reviewers, write_human_labels
from pmc.review._log import append, now_utc, read_log, review_dir
from pmc.review._standing import latest_window_decisions
from pmc.review._truth import TRUTH_REVIEWER, truth_decision, truth_labels
from pmc.review._types import Entry, Target, Window
from pmc.table import Table

COMPARE_DIR = "compare"


def engine_labels(workdir: Path, conversation_ids: Sequence[str]) -> dict[str, Labels]:
    """The engine's labels of the given conversations (those it has)."""
    found = {}
    for cid in conversation_ids:
        path = labels_dir(workdir) / f"{cid}.json"
        if path.exists():
            found[cid] = read_labels(path)
    return found


def current_hashes(workdir: Path, windows: Sequence[Window]) -> dict[str, str]:
    """Each window's label content hash as the labels files hold it now (missing: gone)."""
    hashes: dict[str, dict[str, str]] = {}
    out = {}
    for w in windows:
        if w.conversation_id not in hashes:
            path = labels_dir(workdir) / f"{w.conversation_id}.json"
            labels = read_labels(path).labels if path.exists() else ()
            hashes[w.conversation_id] = {x.id: x.content_sha256() for x in labels}
        sha = hashes[w.conversation_id].get(w.label_id)
        if sha is not None:
            out[w.window_id] = sha
    return out


def review_tables(
    workdir: Path, current: Mapping[str, str], windows: Sequence[str] | None = None
) -> list[Table]:
    """The review's tables: window decisions, the engine against people, reviewers compared.

    Args:
        workdir: The working directory.
        current: Each window's label content hash now (``pmc.points.read_windows``).
        windows: Count decisions on these windows only (a run's points); all when None.
    """
    entries = read_log(workdir).entries
    human = {r: all_human_labels(workdir, r) for r in human_reviewers(workdir)}
    conversations = sorted({c for labels in human.values() for c in labels})
    engine = engine_labels(workdir, conversations)
    rows = [engine_vs_human(r, engine, human[r]) for r in sorted(human)]
    return [
        decisions_table(entries, current, windows),
        engine_table(rows),
        reviewers_table(entries, current, human),
    ]


def write_comparison(workdir: Path, tables: Sequence[Table]) -> list[Path]:
    """Write each table as Markdown and CSV under ``WORKDIR/review/compare``."""
    folder = review_dir(workdir) / COMPARE_DIR
    written = []
    for table in tables:
        md, csv = folder / f"{table.key}.md", folder / f"{table.key}.csv"
        io.write_text(md, table.markdown())
        io.write_text(csv, table.csv())
        written += [md, csv]
    return written


@dataclass
class TruthImport:
    """What importing the demo's ground truth did."""

    conversations: list[str] = field(default_factory=list)
    decided: int = 0
    already: int = 0
    skipped: list[str] = field(default_factory=list)


def import_truth(workdir: Path, truth_dir: Path, windows: Sequence[Window]) -> TruthImport:
    """Load the demo's ground truth as the reviewer ``truth``: labels, and window decisions.

    Each conversation with engine labels gets the truth's labels; each window gets the truth's
    decision, unless ``truth`` already decided it on the same label (so a second import adds
    nothing). A ground-truth file that cannot be read is named and skipped.
    """
    if not truth_dir.is_dir():
        raise PmcError(
            f"{truth_dir}: no ground truth here (the demo corpus writes it to "
            f"WORKDIR/demo-source/{GROUND_TRUTH_DIR}; give --truth-dir for another folder)"
        )
    done = TruthImport()
    truths: dict[str, Labels] = {}
    for path in sorted(truth_dir.glob("*.json")):
        try:
            truth = read_ground_truth(path)
        except InputError as exc:
            done.skipped.append(str(exc))
            continue
        engine = engine_labels(workdir, [truth.conversation_id])
        if not engine:
            continue  # not in this working directory's corpus
        labels = truth_labels(truth, engine[truth.conversation_id].duration_s)
        write_human_labels(workdir, TRUTH_REVIEWER, labels)
        truths[truth.conversation_id] = labels
        done.conversations.append(truth.conversation_id)
    latest = latest_window_decisions(read_log(workdir, TRUTH_REVIEWER).entries)
    for window in windows:
        truth_of = truths.get(window.conversation_id)
        if truth_of is None:
            continue
        before = latest.get((TRUTH_REVIEWER, window.window_id))
        if before is not None and before.label_sha256 == window.label_sha256:
            done.already += 1
            continue
        decision, reason, note = truth_decision(window, truth_of)
        entry = Entry(
            reviewer=TRUTH_REVIEWER,
            target=Target.WINDOW,
            target_id=window.window_id,
            conversation_id=window.conversation_id,
            label_id=window.label_id,
            label_sha256=window.label_sha256,
            decision=decision,
            at_utc=now_utc(),
            reason=reason,
            note=note,
        )
        append(workdir, entry)
        done.decided += 1
    return done
