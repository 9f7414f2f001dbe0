"""Words for every stretch of speech the gate finds, and speech heard without words (issue 38).

The played track is recognised clip by clip, each stretch of gated speech with half a second
either side, so Whisper judges each reply in a window of its own: over the whole track, mostly
silence, it can return nothing for a short phrase the system has said before in that rollout.
Where it still returns nothing for gated speech after the boundary, the score says so.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from pmc.asr import TimedWord, Transcriber
from pmc.audio import SAMPLE_RATE, FloatArray
from pmc.gate import Interval
from pmc.harness import (
    ProtocolParams,
    RunSettings,
    StopReason,
    read_rollout,
    run_rollouts,
    runs_dir,
)
from pmc.points import Point, PointKind, read_points
from pmc.report import build_report
from pmc.scoring import (
    CLIP_JOIN_S,
    CLIP_MARGIN_S,
    ScoreSettings,
    ScoreStatus,
    Transcription,
    clips,
    read_scores,
    run_scoring,
    transcribe_track,
)
from pmc.systems import Family, SystemCard
from pmc.testing.points import write_points
from pmc.testing.systems import ScriptedSystem
from tests.systems.conftest import linked_points

PHRASE = "Okay, sure thing."
SPACING_S = 2.5
"""The phrase starts every 2.5 s: a spacing at which Whisper base, given the whole track in one
pass, returned no words for the third of three (checked when this test was written)."""


SCRIPTED = ScriptedSystem.__name__
"""Its module registers the ``scripted`` adapter the cards below use."""


class Stamps(Transcriber):
    """Says one word at the start of every clip it is given, and notes each clip's length."""

    spec = "test:stamps"

    def __init__(self) -> None:
        self.lengths: list[int] = []

    def transcribe(self, audio: FloatArray) -> list[TimedWord]:
        self.lengths.append(len(audio))
        return [TimedWord("here", 0.0, 0.1, 0.9)]


def test_intervals_close_together_share_a_clip_with_a_margin_each_side() -> None:
    samples = 10 * SAMPLE_RATE
    found = clips(
        [
            Interval(0.2, 0.9),
            Interval(0.9 + CLIP_JOIN_S - 0.01, 2.5),  # a gap just under the join: one clip
            Interval(2.5 + CLIP_JOIN_S, 4.0),  # a gap of the join itself: a clip of its own
            Interval(9.8, 9.95),
        ],
        samples,
    )
    starts_s = [c.start_sample / SAMPLE_RATE for c in found]
    ends_s = [c.end_sample / SAMPLE_RATE for c in found]
    assert starts_s == pytest.approx([0.0, 2.5 + CLIP_JOIN_S - CLIP_MARGIN_S, 9.8 - CLIP_MARGIN_S])
    assert ends_s == pytest.approx([2.5 + CLIP_MARGIN_S, 4.0 + CLIP_MARGIN_S, 10.0])


def test_a_clip_s_words_are_put_back_on_the_stream_clock_by_its_first_sample() -> None:
    track = np.zeros(12 * SAMPLE_RATE, dtype=np.float32)
    intervals = [Interval(1.0, 1.5), Interval(6.123, 7.0)]
    stamps = Stamps()
    words = transcribe_track(track, intervals, stamps)
    first = [round((i.start_s - CLIP_MARGIN_S) * SAMPLE_RATE) / SAMPLE_RATE for i in intervals]
    assert [w.start_s for w in words] == first  # exact: the shift is the clip's first sample
    assert [w.end_s for w in words] == [s + 0.1 for s in first]
    assert len(stamps.lengths) == 2
    # The whole track in one pass, as before the setting; nothing at all without gated speech.
    assert len(transcribe_track(track, intervals, stamps, Transcription.TRACK)) == 1
    assert stamps.lengths[-1] == len(track)
    assert transcribe_track(track, [], stamps) == []


def test_scores_made_before_the_setting_read_as_one_pass_and_are_made_again() -> None:
    earlier = ScoreSettings().to_dict()
    del earlier["transcription"]
    read = ScoreSettings.from_dict(earlier)
    assert read.transcription is Transcription.TRACK
    # The stage makes again every score whose settings' digest is not the run's.
    assert read.digest() != ScoreSettings().digest()
    assert ScoreSettings.from_dict(ScoreSettings().to_dict()) == ScoreSettings()


def _turn_end(points: list[Point]) -> Point:
    """The demo's shortest turn end with room for two phrases before its boundary."""
    room = 2 * SPACING_S + 0.5
    return min(
        (p for p in points if p.kind is PointKind.TURN_END and p.boundary_stream_s > room),
        key=lambda p: p.boundary_stream_s,
    )


@pytest.mark.slow
def test_a_phrase_said_three_times_has_its_words_every_time(
    demo_points_workdir: Path, tmp_path: Path
) -> None:
    point = _turn_end(read_points(demo_points_workdir))
    workdir = linked_points(demo_points_workdir, [point], tmp_path / "w")
    third_s = point.boundary_stream_s + 0.3  # the last one after the boundary
    starts = [third_s - 2 * SPACING_S, third_s - SPACING_S, third_s]
    say = [{"at_s": at, "text": PHRASE, "spoken": True, "seconds": 0} for at in starts]
    card = SystemCard("repeats", "scripted", Family.LOCAL, params={"say": say})
    run_rollouts(workdir, [card], RunSettings("r", params=ProtocolParams(cap_s=10.0)))
    run = runs_dir(workdir) / "r"
    trace, _ = read_rollout(run / "rollouts" / "repeats" / point.point_id / "0")
    assert trace.protocol is not None and trace.protocol.stop_reason is StopReason.REPLIED
    run_scoring(run, ScoreSettings(), workers=1)  # Whisper base, as every run is scored
    (score,) = read_scores(run, "repeats")
    assert score.status is ScoreStatus.SCORED
    words = [w for e in score.evidence for w in e.words]
    for at in starts:
        said = [w.text for w in words if at - 0.3 <= w.start_s < at + SPACING_S - 0.3]
        assert "sure" in " ".join(said).lower(), (at, [(w.text, w.start_s) for w in words])
    assert score.reply is not None and "sure thing" in score.reply.transcript.lower()
    assert score.reply.latency_s is not None and 0.3 <= score.reply.latency_s < 0.5


def test_speech_without_words_after_the_boundary_is_an_outcome_of_its_own(tmp_path: Path) -> None:
    # A tone passes the gate and Whisper hears no words in it: a reply heard but not counted.
    points = write_points(tmp_path)
    after_s = max(p.boundary_stream_s for p in points if p.kind is not PointKind.PAUSE) + 0.5
    say = [{"at_s": after_s, "seconds": 1.0, "text": "hum"}]
    card = SystemCard("hum", "scripted", Family.LOCAL, params={"say": say})
    run_rollouts(tmp_path, [card], RunSettings("r", params=ProtocolParams(cap_s=8.0)))
    run = runs_dir(tmp_path) / "r"
    run_scoring(run, ScoreSettings(asr="faster-whisper:tiny.en"), workers=1)
    scores = read_scores(run, "hum")
    by_kind = {k: [s for s in scores if s.kind is k] for k in PointKind}
    for s in by_kind[PointKind.TURN_END] + by_kind[PointKind.FACT_RECALL]:
        assert s.status is ScoreStatus.UNTRANSCRIBED, s.point_id
        assert s.evidence and all(not e.word_bearing for e in s.evidence)
    assert all(s.reply is not None and s.reply.words == 0 for s in by_kind[PointKind.TURN_END])
    # At a pause the same sound stays what it was: wordless phonation, not a takeover.
    (pause,) = by_kind[PointKind.PAUSE]
    assert pause.status is ScoreStatus.SCORED and pause.pause is not None

    report = build_report(run, resamples=50).parent
    main = _csv(report / "tables" / "main_turn_end.csv")
    assert [r["heard, no words"] for r in main] == ["2"]
    (outcomes,) = _csv(report / "tables" / "exceptional_outcomes.csv")
    assert outcomes["turn end: heard, no words"] == "2"
    assert outcomes["turn end: no words"] == "0"
    assert outcomes["recall: heard, no words"] == "1"


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))
