import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from pmc import audio
from pmc.cli import cli
from pmc.corpus import Channel, WordSource, read_corpus
from pmc.labels import Flag, LabelKind, label_conversation
from pmc.labels._stage import label_paths, read_labels, run_labels
from pmc.labels._vap import flag_with_projection
from pmc.testing import FakeParticipant, participant, write_extracted
from pmc.testing.vap import ScriptedProjector
from pmc.tts._piper import synthesize

KEY = "V00_S0001_I00000001"


def _corpus(root: Path, workdir: Path) -> None:
    # A: two turns; B: a turn between them, then a backchannel during A's second turn.
    a = participant(
        f"{KEY}_P0001",
        [
            ("so", 0.5, 0.8),
            ("then", 0.9, 1.3),
            ("we", 4.0, 4.3),
            ("left", 4.4, 4.8),
            ("early", 4.9, 5.6),
        ],
        duration_s=9.0,
    )
    b = participant(
        f"{KEY}_P0002",
        [("oh", 1.8, 2.0), ("did", 2.1, 2.4), ("you", 2.5, 3.2), ("yeah", 4.6, 4.9)],
        duration_s=9.0,
    )
    write_extracted(root, [a, b])
    runner = CliRunner()
    args = ["corpus", "import", "seamless", str(root), "--workdir", str(workdir)]
    assert runner.invoke(cli, [*args, "--min-duration", "0"]).exit_code == 0


def test_labels_and_select_write_their_files(tmp_path: Path) -> None:
    _corpus(tmp_path / "src", tmp_path / "w")
    runner = CliRunner()
    result = runner.invoke(cli, ["labels", "--workdir", str(tmp_path / "w")])
    assert result.exit_code == 0, result.output
    (path,) = label_paths(tmp_path / "w")
    labels = read_labels(path)
    turns = labels.of(LabelKind.TURN)
    assert [(t.speaker, t.text) for t in turns] == [
        (Channel.A, "so then"),
        (Channel.B, "oh did you"),
        (Channel.A, "we left early"),
    ]
    (bc,) = labels.of(LabelKind.BACKCHANNEL)
    assert (bc.speaker, bc.text) == (Channel.B, "yeah")
    folder = tmp_path / "w" / "labels"
    for name in ("inventory.md", "inventory.csv", "inventory.json"):
        assert (folder / name).stat().st_size > 0
    assert (folder / "inventory.png").read_bytes().startswith(b"\x89PNG")
    assert json.loads((folder / "inventory.json").read_text())["conversations"] == 1
    result = runner.invoke(cli, ["select", "--workdir", str(tmp_path / "w")])
    assert result.exit_code == 0, result.output
    selection = json.loads((folder / "selection.json").read_text())
    (row,) = selection["rows"]
    assert row["conversation_id"] == KEY and row["score"] == 0.5
    assert "0 of 1 conversations selected (score >= 0.75)" in result.output


def test_rerun_reuses_labels_and_is_byte_identical(tmp_path: Path) -> None:
    _corpus(tmp_path / "src", tmp_path / "w")
    first = run_labels(tmp_path / "w")
    (path,) = label_paths(tmp_path / "w")
    before = path.read_bytes()
    second = run_labels(tmp_path / "w")
    assert (first.labelled, second.labelled, second.reused) == ([KEY], [], [KEY])
    path.unlink()
    third = run_labels(tmp_path / "w")
    assert third.labelled == [KEY]
    assert path.read_bytes() == before


def test_gap_fill_transcribes_speech_the_transcript_left_empty(tmp_path: Path) -> None:
    """A real recogniser (the bundled tiny.en) on real synthesised speech."""
    speech = synthesize(("The", "water", "was", "freezing", "cold."))
    track = np.zeros(6 * audio.SAMPLE_RATE, dtype=np.float32)
    start = 2 * audio.SAMPLE_RATE
    track[start : start + len(speech.audio)] = speech.audio
    voiced = (2.0 + speech.spans[0][0], 2.0 + speech.spans[-1][1])
    a = participant(f"{KEY}_P0001", [("hi", 0.5, 0.9)], duration_s=6.0, sample_rate=24_000)
    a = FakeParticipant(
        a.file_id,
        track,
        24_000,
        "PCM_16",
        transcript=a.transcript,
        vad=[{"start": 0.5, "end": 0.9}, {"start": voiced[0], "end": voiced[1]}],
    )
    b = participant(f"{KEY}_P0002", [("yes", 4.5, 4.9)], duration_s=6.0)
    write_extracted(tmp_path / "src", [a, b])
    runner = CliRunner()
    args = ["--workdir", str(tmp_path / "w")]
    runner.invoke(
        cli, ["corpus", "import", "seamless", str(tmp_path / "src"), *args, "--min-duration", "0"]
    )
    run = run_labels(tmp_path / "w", asr="faster-whisper:tiny.en")
    assert run.gap_fill_words >= 4
    labels = read_labels(label_paths(tmp_path / "w")[0])
    filled = labels.filled_words[Channel.A]
    texts = [w.text.lower().strip(".,") for w in filled]
    assert {"water", "freezing"} <= set(texts)
    assert all(w.source is WordSource.GAP_FILL for w in filled)
    assert all(voiced[0] - 0.05 <= (w.start_conv_s + w.end_conv_s) / 2 <= voiced[1] for w in filled)
    turn = next(t for t in labels.of(LabelKind.TURN, Channel.A) if "water" in t.text.lower())
    assert (turn.words, turn.gap_fill_words) == (6, 5)  # "hi", then five filled words
    assert Flag.GAP_FILL_WORDS in turn.flags
    # Without an ASR nothing is filled, and the stretch is a wordless part of a turn.
    run_labels(tmp_path / "w", asr=None)
    assert read_labels(label_paths(tmp_path / "w")[0]).filled_words == {}


def test_projection_flags(tmp_path: Path) -> None:
    _corpus(tmp_path / "src", tmp_path / "w")
    (conversation,) = read_corpus(tmp_path / "w")
    labels = label_conversation(conversation)
    first_end = labels.of(LabelKind.END_OF_TURN, Channel.A)[0].start_conv_s
    bc = labels.of(LabelKind.BACKCHANNEL)[0]
    # A projected to keep the floor at its first turn end; B handed the floor at its backchannel.
    projector = ScriptedProjector(
        p_a=0.5,
        windows=(
            (first_end - 0.1, first_end + 0.1, 0.7),
            (bc.end_conv_s - 0.05, bc.end_conv_s + 0.05, 0.3),
        ),
    )
    flagged = flag_with_projection(labels, projector.project(conversation))
    a_turns = flagged.of(LabelKind.TURN, Channel.A)
    assert Flag.VAP_HOLD_AT_TURN_END in a_turns[0].flags
    assert Flag.VAP_HOLD_AT_TURN_END not in a_turns[1].flags
    assert Flag.VAP_HOLD_AT_TURN_END in flagged.of(LabelKind.END_OF_TURN, Channel.A)[0].flags
    assert flagged.of(LabelKind.BACKCHANNEL)[0].flags == (Flag.VAP_HANDOVER_AT_BACKCHANNEL,)
    # Just under the thresholds (0.65 and 0.60): no flags.
    calm = ScriptedProjector(p_a=0.5, windows=((first_end - 0.1, first_end + 0.1, 0.64),))
    unflagged = flag_with_projection(labels, calm.project(conversation))
    assert all(not label.flags for label in unflagged.labels)


def test_projector_plug_in_from_the_command_line(tmp_path: Path) -> None:
    _corpus(tmp_path / "src", tmp_path / "w")
    args = ["labels", "--workdir", str(tmp_path / "w")]
    result = CliRunner().invoke(cli, [*args, "--vap-projector", "pmc.testing.vap:HoldingProjector"])
    assert result.exit_code == 0, result.output
    labels = read_labels(label_paths(tmp_path / "w")[0])
    assert labels.settings["projector"] == "scripted"
    ends = labels.of(LabelKind.END_OF_TURN, Channel.A)
    assert ends and all(Flag.VAP_HOLD_AT_TURN_END in e.flags for e in ends)
    bad = CliRunner().invoke(cli, [*args, "--vap-projector", "nowhere:Nothing"])
    assert bad.exit_code == 1 and "cannot load projector 'nowhere:Nothing'" in bad.output


@pytest.mark.parametrize("command", ["labels", "select"])
def test_stage_without_input_says_what_to_run(tmp_path: Path, command: str) -> None:
    result = CliRunner().invoke(cli, [command, "--workdir", str(tmp_path)])
    assert result.exit_code == 1
    assert "run `pmc" in result.output and "Traceback" not in result.output
