from pathlib import Path

import numpy as np
import pytest

from pmc.corpus import Channel
from pmc.demo._script import PauseKind, parse_script
from pmc.demo._timeline import (
    BACKCHANNEL_DELAY_S,
    BARGE_IN_DELAY_S,
    LEAD_IN_S,
    TAKE_MIN_DELAY_S,
    TAKE_OVERLAP_S,
    DemoTimeline,
    GroundTruthEvent,
    GroundTruthKind,
    PauseOrigin,
    build_timeline,
)
from pmc.errors import InputError
from pmc.tts._piper import Utterance

WORD_S = 0.3
SPACE_S = 0.05
SILENCE_S = 0.04  # leading and trailing silence in each synthesised clip


def fake_synth(words: tuple[str, ...], channel: Channel) -> Utterance:
    """Every word lasts 0.3 s with 50 ms between words; the clip has 40 ms of silence each side."""
    spans = tuple(
        (SILENCE_S + i * (WORD_S + SPACE_S), SILENCE_S + i * (WORD_S + SPACE_S) + WORD_S)
        for i in range(len(words))
    )
    length = round((spans[-1][1] + SILENCE_S) * 24_000)
    return Utterance(np.full(length, 0.1, dtype=np.float32), spans)


def _script(tmp_path: Path, body: str, fact: str = "one two") -> Path:
    path = tmp_path / "s.txt"
    path.write_text(
        f"title: t\nfact_speaker: A\nfact: {fact}\nquestion: q?\nanswer: two\n---\n{body}"
    )
    return path


def _events(timeline: DemoTimeline, kind: GroundTruthKind) -> list[GroundTruthEvent]:
    return [e for e in timeline.events if e.kind is kind]


def test_places_turns_gaps_and_pauses_exactly(tmp_path: Path) -> None:
    path = _script(
        tmp_path,
        "A: one two <pause 0.8 mid> three four five six.\nB -0.4: four five six.\n"
        "A +1.5: seven eight nine.\n",
    )
    timeline = build_timeline(parse_script(path), fake_synth, str(path))
    a_words = timeline.words[Channel.A]
    assert a_words[0].start_conv_s == pytest.approx(LEAD_IN_S)
    (pause,) = _events(timeline, GroundTruthKind.PAUSE)
    assert pause.speaker is Channel.A and pause.pause_kind is PauseKind.MID
    assert pause.origin is PauseOrigin.SCRIPTED
    assert pause.start_conv_s == pytest.approx(a_words[1].end_conv_s)
    assert pause.end_conv_s - pause.start_conv_s == pytest.approx(0.8)
    assert a_words[2].start_conv_s == pytest.approx(pause.end_conv_s, abs=1 / 24_000)
    turn_ends = _events(timeline, GroundTruthKind.TURN_END)
    assert [e.gap_s for e in turn_ends] == pytest.approx([-0.4, 1.5, None])
    b_first = timeline.words[Channel.B][0]
    assert b_first.start_conv_s == pytest.approx(a_words[5].end_conv_s - 0.4, abs=1 / 24_000)
    (overlap,) = _events(timeline, GroundTruthKind.OVERLAP)
    assert overlap.end_conv_s - overlap.start_conv_s == pytest.approx(0.4, abs=1e-4)
    turns = _events(timeline, GroundTruthKind.TURN)
    assert [t.text for t in turns] == [
        "one two three four five six.",
        "four five six.",
        "seven eight nine.",
    ]
    (fact,) = _events(timeline, GroundTruthKind.FACT)
    assert (fact.start_conv_s, fact.end_conv_s) == (a_words[0].start_conv_s, a_words[1].end_conv_s)


def test_backchannel_and_failed_take_go_to_the_listener(tmp_path: Path) -> None:
    path = _script(
        tmp_path,
        "A: one two <bc yeah> three <pause 2.0 take: so did you> four.\nB: okay then sure.\n",
    )
    timeline = build_timeline(parse_script(path), fake_synth, str(path))
    a = timeline.words[Channel.A]
    (bc,) = _events(timeline, GroundTruthKind.BACKCHANNEL)
    assert bc.speaker is Channel.B and bc.text == "yeah"
    assert bc.start_conv_s == pytest.approx(a[1].end_conv_s + BACKCHANNEL_DELAY_S, abs=1e-4)
    (take,) = _events(timeline, GroundTruthKind.FAILED_TAKE)
    (pause,) = _events(timeline, GroundTruthKind.PAUSE)
    assert take.speaker is Channel.B and take.text == "so did you"
    # The speaker resumes over the take's last 0.3 s; the pause keeps its scripted 2.0 s.
    assert pause.end_conv_s - pause.start_conv_s == pytest.approx(2.0)
    assert take.end_conv_s == pytest.approx(pause.end_conv_s + TAKE_OVERLAP_S, abs=1e-4)
    assert take.start_conv_s > pause.start_conv_s + TAKE_MIN_DELAY_S
    assert [w.text for w in timeline.words[Channel.B]] == [
        "yeah",
        "so",
        "did",
        "you",
        "okay",
        "then",
        "sure.",
    ]


def test_a_take_longer_than_its_pause_stretches_the_pause(tmp_path: Path) -> None:
    path = _script(
        tmp_path, "A: one two <pause 1.5 take: so did you see it> three.\nB: okay then sure.\n"
    )
    timeline = build_timeline(parse_script(path), fake_synth, str(path))
    (take,) = _events(timeline, GroundTruthKind.FAILED_TAKE)
    (pause,) = _events(timeline, GroundTruthKind.PAUSE)
    # Five words last 1.7 s: starting 0.2 s into the pause, the take ends 1.9 s in.
    assert take.start_conv_s == pytest.approx(pause.start_conv_s + TAKE_MIN_DELAY_S, abs=1e-4)
    assert pause.end_conv_s == pytest.approx(take.end_conv_s - TAKE_OVERLAP_S, abs=1e-4)
    assert pause.end_conv_s - pause.start_conv_s == pytest.approx(1.6, abs=1e-4)


def test_fact_must_be_said_early(tmp_path: Path) -> None:
    body = "A: one two <pause 3.0> " + " ".join(["la"] * 100) + " three four.\nB: okay then sure.\n"
    path = _script(tmp_path, body, fact="three four")
    with pytest.raises(InputError, match="after 30 s"):
        build_timeline(parse_script(path), fake_synth, str(path))


def test_speaker_cannot_overlap_themself(tmp_path: Path) -> None:
    # B's backchannel lands after A's fourth word, but B's own turn starts 0.4 s before A ends.
    path = _script(
        tmp_path, "A: one two three four <bc yeah yeah> five six.\nB -0.4: four five six.\n"
    )
    with pytest.raises(InputError, match="speaker B would say"):
        build_timeline(parse_script(path), fake_synth, str(path))


def test_an_overlap_cannot_reach_back_before_the_last_phrase(tmp_path: Path) -> None:
    # A's last phrase "six." lasts 0.3 s; B starting 0.5 s before A ends would start first.
    body = "A: one two three four five <pause 0.5> six.\nB -0.5: seven eight nine.\n"
    path = _script(tmp_path, body)
    with pytest.raises(InputError, match=r"line 8: the overlap of -0\.5 s reaches back"):
        build_timeline(parse_script(path), fake_synth, str(path))


def test_a_barge_in_cuts_the_speaker_and_starts_the_listener_s_turn(tmp_path: Path) -> None:
    path = _script(
        tmp_path,
        "A: one two three four.\n"
        "B: five six seven <barge 0.5> eight nine ten eleven.\n"
        "A: twelve thirteen fourteen.\n",
    )
    timeline = build_timeline(parse_script(path), fake_synth, str(path))
    b_words = timeline.words[Channel.B]
    seven = b_words[2]
    onset = b_words[3].start_conv_s + BARGE_IN_DELAY_S  # into "eight", the word after it
    cut = onset + 0.5  # inside "nine", which starts 0.40 s after "seven" ends and lasts 0.3 s
    assert [w.text for w in b_words] == ["five", "six", "seven", "eight", "nine"]
    assert b_words[-1].end_conv_s == pytest.approx(cut, abs=1 / 24_000)
    assert b_words[-1].start_conv_s == pytest.approx(seven.end_conv_s + 0.40)
    (barge,) = _events(timeline, GroundTruthKind.BARGE_IN)
    assert barge.speaker is Channel.A
    assert barge.start_conv_s == pytest.approx(onset)
    assert barge.end_conv_s == pytest.approx(cut, abs=1 / 24_000)
    (overlap,) = _events(timeline, GroundTruthKind.OVERLAP)
    assert (overlap.start_conv_s, overlap.end_conv_s) == (barge.start_conv_s, barge.end_conv_s)
    assert timeline.words[Channel.A][4].start_conv_s == pytest.approx(onset, abs=1 / 24_000)
    ends = _events(timeline, GroundTruthKind.TURN_END)
    assert ends[1].end_conv_s == barge.end_conv_s
    assert ends[1].gap_s == pytest.approx(-0.5, abs=1e-4)
    turns = _events(timeline, GroundTruthKind.TURN)
    assert turns[1].text == "five six seven eight nine"
    offset, clip = timeline.clips[Channel.B][-1]
    assert offset + len(clip) == round(cut * 24_000)
    assert clip[-1] == pytest.approx(0.0, abs=0.01) and clip[0] == pytest.approx(0.1)


def test_a_barge_in_must_stop_the_speaker_before_the_turn_ends(tmp_path: Path) -> None:
    path = _script(
        tmp_path,
        "A: one two three four.\nB: five six seven <barge 1.5> eight.\nA: nine ten eleven.\n",
    )
    with pytest.raises(InputError, match="line 8: the turn is over"):
        build_timeline(parse_script(path), fake_synth, str(path))
