from pathlib import Path

import pytest

from pmc.corpus import Channel
from pmc.demo import script_paths
from pmc.demo._script import Pause, PauseKind, Phrase, parse_script
from pmc.errors import InputError

HEADER = """title: t
fact_speaker: A
fact: my dog is called Rex
question: What did you say your dog is called?
answer: Rex
---
"""


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "s.txt"
    path.write_text(HEADER + body)
    return path


def test_parses_turns_pauses_takes_and_backchannels(tmp_path: Path) -> None:
    script = parse_script(
        _script(
            tmp_path,
            "A: Hi, my dog is called Rex. <pause 0.8> He is <bc yeah> very good <pause 1.6 mid "
            "take: so is he> at fetching.\n"
            "B -0.3: Nice one there!\n",
        )
    )
    first, second = script.turns
    assert (first.speaker, first.gap_s, first.line) == (Channel.A, 0.3, 7)
    assert (second.speaker, second.gap_s) == (Channel.B, -0.3)
    p1, pause, p2, take, p3 = first.pieces
    assert isinstance(p1, Phrase) and p1.words == ("Hi,", "my", "dog", "is", "called", "Rex.")
    assert pause == Pause(0.8, PauseKind.COMPLETE)
    assert isinstance(p2, Phrase) and p2.backchannels == ((1, ("yeah",)),)
    assert take == Pause(1.6, PauseKind.MID, ("so", "is", "he"))
    assert isinstance(p3, Phrase) and p3.words == ("at", "fetching.")


def test_parses_a_barge_in_and_the_turn_it_starts(tmp_path: Path) -> None:
    script = parse_script(
        _script(
            tmp_path,
            "A: Hi, my dog is called Rex.\n"
            "B: Nice, and mine is <bc oh> called Spot, <barge 0.6> he is a very good boy.\n"
            "A: Wait, Spot the dog?\n",
        )
    )
    first, second, third = script.turns
    (phrase,) = second.pieces
    assert isinstance(phrase, Phrase) and phrase.backchannels == ((3, ("oh",)),)
    assert phrase.barge_in == (5, 0.6) and phrase.words[5] == "Spot,"
    assert second.barge_in == (5, 0.6) and first.barge_in is None
    assert not third.gap_given


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("A: Hi there you.\nA: Again and again.\n", "line 8: speaker A speaks twice in a row"),
        ("A: Hi there you.\nB: Hello.\n", "line 8: a turn has at least 3 words"),
        ("A: Hi there you.\nB -0.2: Well hello there.\n", "line 8: a turn of 3 words overlapped"),
        ("A +2.5: Hi.\n", "gap 2.5 s outside"),
        ("A: Hi <pause 3.5> there.\n", "pause 3.5 s outside"),
        ("A: Hi <pause 1.0 take: no wait> there.\n", "a failed take has"),
        ("A: Hi <pause 1.0 take: so did you> there.\n", "a take needs a pause of 1.5 s"),
        ("A: Hi <bc oh my goodness> there.\n", "a backchannel has 1 to 2 words"),
        ("A: Hi there <bc yeah>\n", "a backchannel needs words on both sides"),
        ("A: I have 3 dogs.\n", "write numbers as words"),
        ("A: Hi \u2014 there.\n", "characters not allowed"),
        ("A: Hi <laugh> there.\n", "unknown marker <laugh>"),
        ("A: Hi there. <pause 0.5>\n", "a turn must end with words"),
        ("A: Hi there you <barge 0.5> and more.\nB: Well hello there.\n", "line 7: a barge-in"),
        (
            "A: Hi there you.\nB: Well hello <barge 0.5> there you.\n",
            "line 8: a barge-in needs 3 words",
        ),
        (
            "A: Hi there you.\nB: Well hello you <barge 0.5> there.\nA +0.2: Sorry go on.\n",
            "line 9:",
        ),
        (
            "A: Hi there you.\nB: Well hello you <barge 2.0> there.\nA: So sorry.\n",
            "barge-in 2.0 s",
        ),
        (
            "A: Hi there you.\nB: Well hello you. <barge 0.5> <pause 0.4> So.\nA: Oh.\n",
            "nothing but",
        ),
        ("A: Hi there you.\nB: Hello you there <barge 0.5>\nA: Oh hi you.\n", "cuts off after it"),
    ],
)
def test_errors_name_the_line(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        parse_script(_script(tmp_path, body))
    assert str(tmp_path / "s.txt") in str(info.value)


def test_header_is_required(tmp_path: Path) -> None:
    path = tmp_path / "s.txt"
    path.write_text("title: t\n---\nA: Hi there you.\n")
    with pytest.raises(InputError, match="header lacks fact_speaker, fact, question, answer"):
        parse_script(path)


def test_bundled_scripts_exercise_what_the_benchmark_measures() -> None:
    """The Foundation issue's list, checked per conversation on the scripts themselves."""
    paths = script_paths()
    assert len(paths) >= 8
    all_gaps = [t.gap_s for path in paths for t in parse_script(path).turns[1:]]
    assert (min(all_gaps), max(all_gaps)) == (-0.5, 2.0)
    for path in paths:
        script = parse_script(path)
        pauses = [p for t in script.turns for p in t.pieces if isinstance(p, Pause)]
        phrases = [p for t in script.turns for p in t.pieces if isinstance(p, Phrase)]
        durations = [p.duration_s for p in pauses]
        gaps = [t.gap_s for t in script.turns[1:]]
        said = [w.lower().strip(".,?!") for p in phrases for w in p.words]
        backchannels = [" ".join(bc) for p in phrases for _, bc in p.backchannels]
        assert min(durations) <= 0.4 and max(durations) >= 2.0, path.name
        assert {p.kind for p in pauses} == {PauseKind.COMPLETE, PauseKind.MID}, path.name
        assert min(gaps) <= -0.2 and max(gaps) >= 1.0, path.name
        assert sum(g < 0 for g in gaps) >= 3, path.name
        assert sum(bool(p.take) for p in pauses) >= 1, path.name
        assert len(backchannels) >= 4, path.name
        assert sum(t.barge_in is not None for t in script.turns) >= 3, path.name
        assert sum(w.endswith("?") for p in phrases for w in p.words) >= 3, path.name
        fact = [w.lower().strip(".,?!") for w in script.fact.split()]
        assert any(said[i : i + len(fact)] == fact for i in range(len(said))), path.name
    every_backchannel = {
        " ".join(bc)
        for path in paths
        for t in parse_script(path).turns
        for p in t.pieces
        if isinstance(p, Phrase)
        for _, bc in p.backchannels
    }
    assert {"yeah", "mm-hm", "right"} <= every_backchannel
