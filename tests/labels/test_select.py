import csv
import io
import json

import pytest

from pmc.corpus._types import Channel
from pmc.labels._select import (
    LIVELINESS_CUTOFF,
    SELECTION_SCHEMA_VERSION,
    Selection,
    Traits,
    select,
    selection_csv,
    selection_table_markdown,
    traits_of,
)
from pmc.labels._types import LabelKind, Labels
from pmc.testing.labels import make_label

A, B = Channel.A, Channel.B
TURN, PAUSE, EOT = LabelKind.TURN, LabelKind.PAUSE, LabelKind.END_OF_TURN
BC, FAILED, OVERLAP = LabelKind.BACKCHANNEL, LabelKind.FAILED_TAKE, LabelKind.OVERLAP

Spec = tuple[LabelKind, Channel, float, float, str]


def _labels(
    cid: str, specs: list[Spec], *, eots: list[tuple[Channel, float, float | None]]
) -> Labels:
    """One minute of conversation from (kind, speaker, start, end, text) and (speaker, at, ft)."""
    made = [
        make_label(cid, kind, who, start, end, text=text) for kind, who, start, end, text in specs
    ]
    made += [make_label(cid, EOT, who, at, floor_transfer_s=ft) for who, at, ft in eots]
    return Labels(cid, 60.0, tuple(sorted(made, key=lambda x: x.start_conv_s)))


def _c1() -> Labels:
    # Speech A = 10 + 2 = 12, B = 2.5 + 0.5 = 3: balance 0.25. Two handovers. Utterances: three
    # turns, a backchannel and two failed takes; 0.5 s backchannel and two 0.5 s failed takes are
    # short: 3 / 6 = 0.5. One turn has "?", so B's "was ..." turn does not count: 1 question.
    # Longest turn 10 s of 60: 1 - 1/6 = 0.8333. One overlap.
    return _labels(
        "c1",
        [
            (TURN, A, 0.0, 10.0, "did you see it?"),
            (BC, B, 3.0, 3.5, "mm"),
            (OVERLAP, B, 3.0, 3.5, ""),
            (TURN, B, 10.0, 12.5, "was it good"),
            (TURN, A, 12.5, 14.5, "right"),
            (FAILED, B, 15.0, 15.5, "but"),
            (FAILED, B, 16.0, 16.5, "and"),
        ],
        eots=[(A, 10.0, 0.0), (B, 12.5, 0.0), (A, 14.5, None)],
    )


def _c2() -> Labels:
    # Speech A = 5 + 0.5 + 0.5 = 6, B = 6: balance 1. Five handovers. Utterances: six turns and
    # two failed takes of exactly 1 s (not short); the four 0.5 s turns are: 4 / 8 = 0.5, a tie
    # with c1. No "?" and no turn opens with a question word: 0 questions. Longest turn 5 s:
    # 1 - 5/60 = 0.9167. Two overlaps.
    return _labels(
        "c2",
        [
            (TURN, A, 0.0, 5.0, "well I think so"),
            (OVERLAP, B, 4.9, 5.0, ""),
            (TURN, B, 5.0, 10.0, "sure thing"),
            (OVERLAP, A, 9.9, 10.0, ""),
            (TURN, A, 10.0, 10.5, "yeah"),
            (TURN, B, 10.5, 11.0, "okay"),
            (TURN, A, 11.0, 11.5, "right"),
            (TURN, B, 11.5, 12.0, "mhm"),
            (FAILED, A, 20.0, 21.0, "so"),
            (FAILED, B, 30.0, 31.0, "well"),
        ],
        eots=[
            *((who, at, 0.0) for who, at in [(A, 5.0), (B, 10.0), (A, 10.5), (B, 11.0), (A, 11.5)]),
            (B, 12.0, None),
        ],
    )


def _c3() -> Labels:
    # Speech A = 20, B = 10: balance 0.5. One handover. Two turns, neither short: 0. No "?"
    # anywhere, so turns opening with a question word count: "What," and "Do": 2 questions.
    # Longest turn 20 s: 1 - 1/3 = 0.6667. No overlap.
    return _labels(
        "c3",
        [(TURN, A, 0.0, 20.0, "What, is it"), (TURN, B, 20.0, 30.0, "Do you know it")],
        eots=[(A, 20.0, 0.0), (B, 30.0, None)],
    )


def test_traits_are_measured_by_hand() -> None:
    assert traits_of(_c1()).values() == pytest.approx((0.25, 2.0, 0.5, 1.0, 5 / 6, 1.0))
    assert traits_of(_c2()).values() == pytest.approx((1.0, 5.0, 0.5, 0.0, 11 / 12, 2.0))
    assert traits_of(_c3()).values() == pytest.approx((0.5, 1.0, 0.0, 2.0, 2 / 3, 0.0))


def test_rates_are_per_minute_of_duration() -> None:
    c3 = _c3()
    longer = Labels(c3.conversation_id, 120.0, c3.labels)
    traits = traits_of(longer)
    assert traits.alternations_per_min == 0.5
    assert traits.question_rate == 1.0
    assert traits.one_minus_longest_share == pytest.approx(1 - 20 / 120)


def test_ranks_and_scores_are_worked_out_by_hand() -> None:
    # Rank = (2 × below + equal, itself included) / 2N with N = 3, so 1/6, 3/6, 5/6 untied.
    # balance      c1 .25 → 1, c3 .5 → 3, c2 1 → 5
    # alternations c3 1 → 1, c1 2 → 3, c2 5 → 5
    # short        c3 0 → 1, c1 = c2 .5 → (2 + 2) = 4 each
    # questions    c2 0 → 1, c1 1 → 3, c3 2 → 5
    # 1 - longest  c3 → 1, c1 → 3, c2 → 5
    # overlaps     c3 0 → 1, c1 1 → 3, c2 2 → 5
    # Scores (sum / 36): c1 17, c2 25, c3 12.
    rows = {r.conversation_id: r for r in select([_c1(), _c2(), _c3()]).rows}
    assert rows["c1"].ranks.values() == pytest.approx((1 / 6, 3 / 6, 4 / 6, 3 / 6, 3 / 6, 3 / 6))
    assert rows["c2"].ranks.values() == pytest.approx((5 / 6, 5 / 6, 4 / 6, 1 / 6, 5 / 6, 5 / 6))
    assert rows["c3"].ranks.values() == pytest.approx((3 / 6, 1 / 6, 1 / 6, 5 / 6, 1 / 6, 1 / 6))
    assert rows["c1"].score == pytest.approx(17 / 36)
    assert rows["c2"].score == pytest.approx(25 / 36)
    assert rows["c3"].score == pytest.approx(12 / 36)


def test_ties_get_equal_ranks() -> None:
    rows = {r.conversation_id: r for r in select([_c1(), _c2(), _c3()]).rows}
    assert rows["c1"].ranks.short_utterance_rate == rows["c2"].ranks.short_utterance_rate
    same = select([_c3(), Labels("c4", 60.0, _c3().labels)])
    assert same.rows[0].ranks == same.rows[1].ranks == Traits(*[0.5] * 6)


def test_input_order_changes_nothing() -> None:
    forward = select([_c1(), _c2(), _c3()])
    assert select([_c3(), _c1(), _c2()]) == forward
    assert [r.conversation_id for r in forward.rows] == ["c1", "c2", "c3"]


def test_cutoff_selects_exactly_the_expected_ones() -> None:
    candidates = [_c1(), _c2(), _c3()]
    assert LIVELINESS_CUTOFF == 0.75
    assert select(candidates).selected_ids == ()
    assert select(candidates, 0.5).selected_ids == ("c2",)
    assert select(candidates, 0.45).selected_ids == ("c1", "c2")
    assert select(candidates, 0.0).selected_ids == ("c1", "c2", "c3")


def test_a_score_equal_to_the_cutoff_is_selected() -> None:
    # c1 beats a one-turn monologue on every trait: six ranks of 3/4, score exactly 0.75.
    quiet = _labels("quiet", [(TURN, A, 0.0, 30.0, "hello")], eots=[(A, 30.0, None)])
    selection = select([quiet, _c1()])
    assert [r.score for r in selection.rows] == [0.75, 0.25]
    assert selection.selected_ids == ("c1",)


def test_a_lone_candidate_ranks_in_the_middle() -> None:
    (row,) = select([_c1()]).rows
    assert row.ranks == Traits(*[0.5] * 6)
    assert row.score == 0.5
    assert not row.selected
    assert select([_c1()], 0.5).selected_ids == ("c1",)


def test_question_fallback_only_without_any_question_mark() -> None:
    unpunctuated = [(TURN, A, 0.0, 2.0, "Where are you"), (TURN, B, 2.0, 4.0, "I'm home")]
    unpunctuated += [(TURN, A, 4.0, 6.0, "how's it going"), (TURN, B, 6.0, 8.0, "IS it")]
    # "Where" and "IS" open questions; "how's" is not in the list.
    assert traits_of(_labels("q", unpunctuated, eots=[])).question_rate == 2.0
    punctuated = [*unpunctuated, (TURN, A, 8.0, 9.0, "Really?")]
    assert traits_of(_labels("q", punctuated, eots=[])).question_rate == 1.0


def test_no_speech_gives_zero_balance() -> None:
    traits = traits_of(Labels("empty", 60.0, ()))
    assert traits == Traits(0.0, 0.0, 0.0, 0.0, 1.0, 0.0)


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="more than once: c1"):
        select([_c1(), _c1()])
    with pytest.raises(ValueError, match="zero: duration must be positive"):
        select([Labels("zero", 0.0, ())])
    with pytest.raises(ValueError, match="cutoff"):
        select([_c1()], 1.5)
    assert select([]).rows == ()


def test_selection_round_trips_through_json() -> None:
    selection = select([_c1(), _c2(), _c3()], 0.5)
    data = json.loads(json.dumps(selection.to_dict()))
    assert data["schema_version"] == SELECTION_SCHEMA_VERSION
    assert set(data["rows"][0]["traits"]) == set(Traits.names())
    assert Selection.from_dict(data) == selection
    with pytest.raises(ValueError, match="schema version 2"):
        Selection.from_dict({**data, "schema_version": 2})


def test_markdown_table_lists_every_trait_score_and_choice() -> None:
    text = selection_table_markdown(select([_c1(), _c2(), _c3()], 0.5))
    lines = text.splitlines()
    assert lines[0].split(" | ")[2:9] == [*Traits.names(), "score"]
    assert len(lines) == 5
    assert lines[3] == "| c2 | 1.0 | 1.000 | 5.000 | 0.500 | 0.000 | 0.917 | 2.000 | 0.694 | yes |"
    assert lines[2].endswith("| 0.472 | no |")
    assert lines[1] == "| --- " + "| ---: " * 8 + "| :---: |"


def test_markdown_of_no_candidates_is_the_header_alone() -> None:
    lines = selection_table_markdown(select([], 0.5)).splitlines()
    assert len(lines) == 2 and lines[1].endswith("| :---: |")


def test_csv_holds_traits_ranks_and_choice() -> None:
    rows = list(csv.DictReader(io.StringIO(selection_csv(select([_c1(), _c2(), _c3()], 0.5)))))
    assert [r["conversation_id"] for r in rows] == ["c1", "c2", "c3"]
    assert float(rows[1]["alternations_per_min"]) == 5.0
    assert float(rows[1]["rank_alternations_per_min"]) == pytest.approx(5 / 6)
    assert float(rows[0]["score"]) == pytest.approx(17 / 36)
    assert [r["selected"] for r in rows] == ["no", "yes", "no"]
