import csv
import io
import json
from pathlib import Path

import pytest

from pmc.corpus._types import Channel
from pmc.labels._inventory import (
    INVENTORY_KINDS,
    inventory,
    inventory_csv,
    inventory_figure,
    inventory_markdown,
)
from pmc.labels._types import Flag, Label, LabelKind, Labels
from pmc.testing.labels import make_label

A, B = Channel.A, Channel.B
TURN, PAUSE, EOT = LabelKind.TURN, LabelKind.PAUSE, LabelKind.END_OF_TURN
BC, FAILED, OVERLAP = LabelKind.BACKCHANNEL, LabelKind.FAILED_TAKE, LabelKind.OVERLAP


def _label(
    cid: str,
    kind: LabelKind,
    who: Channel,
    start: float,
    end: float | None = None,
    *,
    ft: float | None = None,
    flags: tuple[Flag, ...] = (),
    gap_fill: int = 0,
) -> Label:
    return make_label(
        cid, kind, who, start, end, flags=flags, gap_fill_words=gap_fill, floor_transfer_s=ft
    )


def _x() -> Labels:
    # One minute: turns 2, 4, 1 s; a 0.4 s pause; a 0.5 s backchannel; a 0.5 s overlap; two
    # handovers (+0.5, +0.4 s). Two turns flagged, the backchannel flagged; 3 gap-fill words.
    return Labels(
        "x",
        60.0,
        (
            _label("x", TURN, A, 0.0, 2.0, flags=(Flag.GAP_FILL_WORDS,), gap_fill=3),
            _label("x", PAUSE, A, 0.8, 1.2),
            _label("x", BC, B, 1.0, 1.5, flags=(Flag.VAP_HANDOVER_AT_BACKCHANNEL,), gap_fill=2),
            _label("x", OVERLAP, B, 1.0, 1.5),
            _label("x", EOT, A, 2.0, ft=0.5),
            _label("x", TURN, B, 2.5, 6.5),
            _label("x", EOT, B, 6.5, ft=0.4),
            _label("x", TURN, A, 6.9, 7.9, flags=(Flag.VAP_HOLD_AT_TURN_END,)),
            _label("x", EOT, A, 7.9),
        ),
    )


def _y() -> Labels:
    # Two minutes: turns 3, 3 s; pauses 0.6, 0.2 s; backchannels 0.3, 0.2 s; a 0.3 s failed
    # take; overlaps 0.2, 0.3, 0.2 s; one handover (-0.2 s). One turn flagged; 1 gap-fill word.
    return Labels(
        "y",
        120.0,
        (
            _label("y", TURN, A, 0.0, 3.0, gap_fill=1),
            _label("y", PAUSE, A, 1.0, 1.6),
            _label("y", FAILED, B, 1.2, 1.5),
            _label("y", TURN, B, 2.8, 5.8, flags=(Flag.GAP_FILL_WORDS,)),
            _label("y", OVERLAP, B, 2.8, 3.0),
            _label("y", EOT, A, 3.0, ft=-0.2),
            _label("y", PAUSE, B, 4.0, 4.2),
            _label("y", BC, A, 4.5, 4.8),
            _label("y", OVERLAP, A, 4.5, 4.8),
            _label("y", BC, A, 5.0, 5.2),
            _label("y", OVERLAP, A, 5.0, 5.2),
            _label("y", EOT, B, 5.8),
        ),
    )


def test_counts_rates_and_medians_by_hand() -> None:
    inv = inventory([_x(), _y()])
    assert inv.conversations == 2
    assert inv.total_min == 3.0
    # kind: (count, per minute over 3 min, median duration)
    expected = {
        TURN: (5, 5 / 3, 3.0),  # 2, 4, 1, 3, 3
        PAUSE: (3, 1.0, 0.4),  # 0.4, 0.6, 0.2
        BC: (3, 1.0, 0.3),  # 0.5, 0.3, 0.2
        FAILED: (1, 1 / 3, 0.3),
        OVERLAP: (4, 4 / 3, 0.25),  # 0.5, 0.2, 0.3, 0.2
        EOT: (5, 5 / 3, None),  # an instant has no duration
    }
    assert [k.kind for k in inv.kinds] == list(INVENTORY_KINDS)
    for kind, (count, per_min, median) in expected.items():
        stats = inv.of(kind)
        assert stats.count == count
        assert stats.per_min == pytest.approx(per_min)
        assert stats.median_s == (None if median is None else pytest.approx(median))


def test_flags_gap_fill_and_per_conversation_medians_by_hand() -> None:
    inv = inventory([_x(), _y()])
    assert (inv.flagged_turns, inv.flagged_turn_share) == (3, 0.6)
    assert inv.flag_counts == {
        Flag.GAP_FILL_WORDS: 2,
        Flag.SHORT_LEXICAL_TURN: 0,
        Flag.VAP_HOLD_AT_TURN_END: 1,
        Flag.VAP_HANDOVER_AT_BACKCHANNEL: 1,
        Flag.TERMINAL_OVERLAP: 0,
    }
    assert inv.gap_fill_words == 4  # the backchannel's gap-fill words are not a turn's
    assert inv.median_turns_per_min == 2.0  # x: 3 / min, y: 1 / min
    assert inv.median_backchannels_per_min == 1.0  # both 1 / min
    assert inv.median_overlaps_per_min == 1.25  # x: 1, y: 1.5
    assert inv.median_floor_transfer_s == 0.4  # -0.2, 0.4, 0.5


def test_barge_ins_and_backchannels_during_a_reply_by_hand() -> None:
    # A replies to B from 2 s; B talks over it at 3.5 s (A stops 0.4 s later) and at 8 s
    # (0.8 s); B's backchannels during A's replies at 2.7 s (A goes on 0.8 s) and 9 s (1.2 s).
    def measured(kind: LabelKind, start: float, end: float, **fields: float) -> Label:
        return make_label("z", kind, B, start, end, **fields)

    z = Labels(
        "z",
        60.0,
        (
            measured(LabelKind.REPLY_BACKCHANNEL, 2.7, 3.0, reply_offset_s=0.7, kept_talking_s=0.8),
            measured(
                LabelKind.BARGE_IN, 3.5, 3.9, reply_offset_s=1.5, yield_s=0.4, talk_over_s=0.4
            ),
            measured(
                LabelKind.BARGE_IN, 8.0, 8.8, reply_offset_s=2.5, yield_s=0.8, talk_over_s=0.8
            ),
            measured(LabelKind.REPLY_BACKCHANNEL, 9.0, 9.2, reply_offset_s=0.5, kept_talking_s=1.2),
        ),
    )
    inv = inventory([z])
    assert (inv.of(LabelKind.BARGE_IN).count, inv.of(LabelKind.REPLY_BACKCHANNEL).count) == (2, 2)
    assert inv.of(LabelKind.BARGE_IN).median_s == pytest.approx(0.6)  # it spans the yield
    assert inv.median_barge_in_offset_s == pytest.approx(2.0)
    assert inv.median_yield_s == pytest.approx(0.6)
    assert inv.median_kept_talking_s == pytest.approx(1.0)
    text = inventory_markdown(inv)
    assert "| barge_in | 2 | 2.00 | 0.60 |" in text
    assert "| median yield after a barge-in (s) | 0.60 |" in text
    assert "| median talk after a backchannel in a reply (s) | 1.00 |" in text


def test_empty_and_bad_input() -> None:
    empty = inventory([])
    assert (empty.conversations, empty.total_min, empty.flagged_turn_share) == (0, 0.0, 0.0)
    assert all(k.count == 0 and k.per_min == 0.0 and k.median_s is None for k in empty.kinds)
    assert empty.median_turns_per_min is None
    assert empty.median_floor_transfer_s is None
    assert "| turn | 0 | 0.00 | – |" in inventory_markdown(empty)
    with pytest.raises(ValueError, match="positive duration: zero"):
        inventory([Labels("zero", 0.0, ())])


def test_to_dict_is_plain_json() -> None:
    data = json.loads(json.dumps(inventory([_x(), _y()]).to_dict()))
    assert data["kinds"]["turn"]["count"] == 5
    assert data["kinds"]["end_of_turn"]["median_s"] is None
    assert data["flag_counts"]["GAP_FILL_WORDS"] == 2
    assert data["median_floor_transfer_s"] == 0.4


def test_markdown_and_csv() -> None:
    inv = inventory([_x(), _y()])
    text = inventory_markdown(inv)
    assert "| turn | 5 | 1.67 | 3.00 |" in text
    assert "| end_of_turn | 5 | 1.67 | – |" in text
    assert "| flagged turns | 3 (60.0%) |" in text
    assert "| median overlaps per minute | 1.25 |" in text
    lines = text.splitlines()
    # Two bare tables (no heading), numbers right-aligned, one blank line between them.
    assert lines[:2] == [
        "| label | count | per minute | median duration (s) |",
        "| --- | ---: | ---: | ---: |",
    ]
    assert lines[10:13] == ["", "| quantity | value |", "| --- | ---: |"]
    assert len(lines) == 13 + 4 + len(Flag) + 7 and text.endswith(" | – |\n")
    rows = dict(csv.reader(io.StringIO(inventory_csv(inv))))
    assert rows["quantity"] == "value"
    assert rows["kinds.overlap.count"] == "4"
    assert rows["kinds.end_of_turn.median_s"] == ""
    assert rows["flag_counts.VAP_HOLD_AT_TURN_END"] == "1"
    assert float(rows["median_turns_per_min"]) == 2.0


def test_figure_is_a_deterministic_png(tmp_path: Path) -> None:
    first, second = tmp_path / "a.png", tmp_path / "sub" / "b.png"
    inventory_figure([_x(), _y()], first)
    inventory_figure([_y(), _x()], second)
    assert first.read_bytes().startswith(b"\x89PNG")
    assert first.read_bytes() == second.read_bytes()
    assert b"Software" not in first.read_bytes()


def test_figure_survives_empty_and_single_valued_panels(tmp_path: Path) -> None:
    inventory_figure([], tmp_path / "empty.png")
    one = Labels("one", 60.0, (_label("one", TURN, A, 0.0, 2.0),))
    inventory_figure([one], tmp_path / "one.png")
    assert (tmp_path / "empty.png").read_bytes().startswith(b"\x89PNG")
    assert (tmp_path / "one.png").read_bytes() != (tmp_path / "empty.png").read_bytes()
