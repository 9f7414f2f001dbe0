"""A run under conditions against its clean twin: every number is counted by hand.

The runs are built here, in memory, as the context ablation's are (tests/report/test_ablation.py):
the clean run is the ablation's run with its history, the run under babble the one without (it
holds at two more pauses, answers 0.2 s later and forgets), and both add four barge-ins, where
the system under babble yields at fewer and stops later.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pmc.conditions import parse_conditions
from pmc.errors import PmcError
from pmc.harness import HistorySource
from pmc.points import Point, PointKind
from pmc.report import RunData
from pmc.report._heading import condition_names, headed, same_conditions, under
from pmc.report._twin import Differs, Twin, twin_of, twin_table, write_twin_figure
from pmc.scoring import ClipScore, Score, ScoreStatus
from pmc.table import Table
from tests.report.test_ablation import CONVERSATIONS, _run
from tests.report.test_analyses import SETTINGS, point

BABBLE = parse_conditions("babble-10db", seed=3)


def _barge_in(system: str, p: Point, clip: ClipScore) -> Score:
    return Score(
        p.point_id, system, 0, p.kind, p.conversation_id, ScoreStatus.SCORED, SETTINGS, clip=clip
    )


def _with_barge_ins(data: RunData, noisy: bool) -> RunData:
    """Four barge-ins, one per conversation.

    ``cascade`` yields at every one clean, at two under babble, and stops 0.3 s after the clip
    clean, 0.5 s under babble; ``steady`` yields at two and stops at 0.4 s either way. At the
    fourth, ``cascade`` had finished its reply before the clip under babble (not talking: left
    out of both measures).
    """
    points = dict(data.points)
    scores = {name: list(s) for name, s in data.scores.items()}
    for i, conv in enumerate(CONVERSATIONS):
        p = point(f"{conv}-b", PointKind.BARGE_IN, conv, 1.0, 1.0)
        points[p.point_id] = p
        yields = i < 2 if noisy else True
        talking = not (noisy and i == 3)
        stop = (0.5 if noisy else 0.3) if yields else None
        cascade = ClipScore(True, 2.0, 2.6, talking, yields and talking, stop if talking else None)
        steady = ClipScore(True, 2.0, 2.6, True, i < 2, 0.4 if i < 2 else None)
        scores["cascade"].append(_barge_in("cascade", p, cascade))
        scores["steady"].append(_barge_in("steady", p, steady))
    return replace(data, points=points, scores=scores)


def _clean() -> RunData:
    return replace(_with_barge_ins(_run(HistorySource.FULL, forgets=False), False), run_id="clean")


def _noisy() -> RunData:
    data = _with_barge_ins(_run(HistorySource.FULL, forgets=True), True)
    return replace(data, run_id="noisy", conditions=BABBLE)


def _rows(table: Table) -> dict[tuple[str, str], tuple[object, ...]]:
    return {(str(r[0]), str(r[1])): r for r in table.rows}


def test_the_table_pairs_the_condition_with_its_clean_twin() -> None:
    clean, noisy = _clean(), _noisy()
    # Either order of --compare gives the clean run as the base.
    twin = Twin(Differs.CONDITIONS, clean, noisy)
    assert twin_of(noisy, clean) == twin and twin_of(clean, noisy) == twin
    table = twin_table(twin, seed=0, resamples=200)
    assert table.key == "condition_comparison"
    assert table.title == (
        "Condition: babble-10db (noisy) against clean (clean), paired over points"
    )
    assert table.columns[3:5] == ("clean", "babble-10db")
    rows = _rows(table)
    hold = rows[("cascade", "hold rate at pauses")]
    # Held at 1 of 4 pauses clean, 3 of 4 under babble: +0.50.
    assert hold[2:5] == (4, "0.25", "0.75") and str(hold[5]).startswith("+0.50 [")
    assert hold[6:] == ("2 of 4", "changed")
    latency = rows[("cascade", "turn-end latency, s")]
    assert latency[2:6] == (4, "0.50", "0.70", "+0.20 [+0.20, +0.20]")
    recall = rows[("cascade", "fact recall (strict)")]
    assert recall[3:5] == ("1.00", "0.00") and recall[6] == "4 of 4"
    # Barge-ins: the fourth is left out (not talking under babble); yielded 3 of 3 clean,
    # 2 of 3 under babble; stop latency where it stopped in both runs (the first two).
    yielded = rows[("cascade", "yield rate at barge-ins")]
    assert yielded[2:5] == (3, "1.00", "0.67") and str(yielded[5]).startswith("-0.33 [")
    assert yielded[6] == "1 of 3"
    stop = rows[("cascade", "stop latency at barge-ins, s")]
    assert stop[2:6] == (2, "0.30", "0.50", "+0.20 [+0.20, +0.20]")
    # steady did the same at every point of every measure.
    steady = [r for key, r in rows.items() if key[0] == "steady"]
    assert {r[1] for r in steady} >= {"yield rate at barge-ins", "stop latency at barge-ins, s"}
    for r in steady:
        assert (
            r[5] == "+0.00 [+0.00, +0.00]" and r[7] == "no change: the condition made no difference"
        )
    assert ("cascade", "false yield rate at backchannels") not in rows  # no such points


def test_the_figure_is_drawn(tmp_path: Path) -> None:
    figure = write_twin_figure(tmp_path, Twin(Differs.CONDITIONS, _clean(), _noisy()), 0, 50)
    assert figure is not None and figure.key == "condition_comparison"
    assert figure.title == "Condition: babble-10db minus clean, paired over points"
    assert (tmp_path / figure.file).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_two_condition_lists_pair_the_report_run_as_the_base() -> None:
    babble = _noisy()
    phone = replace(_clean(), run_id="phone", conditions=parse_conditions("telephone"))
    twin = twin_of(babble, phone)
    assert twin == Twin(Differs.CONDITIONS, babble, phone)
    assert twin_table(twin, 0, 20).title.startswith(
        "Condition: telephone (phone) against babble-10db (noisy)"
    )


def test_runs_that_differ_in_history_and_conditions_are_refused() -> None:
    ablated = replace(_noisy(), history=HistorySource.NONE)
    with pytest.raises(PmcError, match=r"differ in both their history .* and their conditions"):
        twin_of(_clean(), ablated)


def test_a_history_twin_under_one_condition_says_so() -> None:
    full = replace(_clean(), conditions=BABBLE)
    none = replace(_noisy(), history=HistorySource.NONE)
    twin = twin_of(full, none)
    assert twin == Twin(Differs.HISTORY, full, none)
    assert twin_table(twin, 0, 20).title == (
        "Context ablation: history none (noisy) against full (clean), paired over points, "
        "both under babble-10db"
    )


def test_conditions_are_named_with_the_parameters_changed_and_compared_without_seeds() -> None:
    changed = parse_conditions("babble-10db:snr_db=0,telephone", seed=1)
    assert condition_names(changed) == "babble-10db:snr_db=0,telephone"
    assert condition_names(()) == "clean" and under(()) == ""
    assert under(BABBLE) == " — under babble-10db"
    assert same_conditions(BABBLE, parse_conditions("babble-10db", seed=9))
    assert not same_conditions(BABBLE, changed[:1])
    # A rerun of a condition with another seed is no twin: nothing to compare.
    assert twin_of(_noisy(), replace(_noisy(), conditions=parse_conditions("babble-10db"))) is None
    table = Table("t", "Main table", ("a",), ())
    assert [t.title for t in headed([table], changed)] == [
        "Main table — under babble-10db:snr_db=0,telephone"
    ]
    assert headed([table], ()) == [table]
