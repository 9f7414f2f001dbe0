"""The exports' pure pieces: FDB's word chunks and task mapping, mixing the heard input."""

from __future__ import annotations

import numpy as np

from pmc.asr import TimedWord
from pmc.audio import SAMPLE_RATE
from pmc.export import FdbTask, mix_input, output_json, task_for
from pmc.points import PointKind


def test_output_json_orders_words_and_crops_at_the_interruption_end() -> None:
    words = [TimedWord(" there.", 1.5, 1.9, 0.9), TimedWord(" Hi", 1.0, 1.4, 0.9)]
    assert output_json(words) == {
        "text": "Hi there.",
        "chunks": [
            {"text": "Hi", "timestamp": [1.0, 1.4]},
            {"text": "there.", "timestamp": [1.5, 1.9]},
        ],
    }
    # FDB crops a user-interruption output at the interruption's end, keeping the clock.
    assert output_json(words, from_stream_s=1.45)["chunks"] == [
        {"text": "there.", "timestamp": [1.5, 1.9]}
    ]


def test_only_kinds_with_an_fdb_task_are_exported() -> None:
    assert task_for(PointKind.PAUSE) is FdbTask.PAUSE_HANDLING
    assert task_for(PointKind.TURN_END) is FdbTask.SMOOTH_TURN_TAKING
    assert task_for(PointKind.BARGE_IN) is FdbTask.USER_INTERRUPTION
    for kind in (PointKind.BACKCHANNEL, PointKind.CONVERSATION_RECALL, PointKind.FACT_RECALL):
        assert task_for(kind) is None
    assert FdbTask.USER_INTERRUPTION.annotation_file == "interrupt.json"


def test_the_clip_is_heard_where_it_played() -> None:
    live = np.full(SAMPLE_RATE, 0.25, dtype=np.float32)
    clip = np.full(SAMPLE_RATE // 2, 0.5, dtype=np.float32)
    heard = mix_input(live, clip, 0.75)
    assert len(heard) == SAMPLE_RATE + SAMPLE_RATE // 4
    at = int(0.75 * SAMPLE_RATE)
    assert heard[at - 1] == 0.25 and heard[at] == 0.75 and heard[-1] == 0.5
