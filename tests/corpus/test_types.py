import json
from pathlib import Path

import pytest

from pmc.audio import AudioRef
from pmc.corpus import (
    CONVERSATION_SCHEMA_VERSION,
    Activity,
    Channel,
    Conversation,
    SourceKind,
    Speaker,
    Word,
    WordSource,
)


def _speaker(channel: Channel, path: str) -> Speaker:
    return Speaker(
        channel=channel,
        participant_id=f"V00_S0001_I00000001_P000{1 if channel is Channel.A else 2}",
        audio=AudioRef(path, 48_000, 480_000, subtype="FLOAT"),
        words=(
            Word("hello", 0.5, 0.91, WordSource.TRANSCRIPT, 0.93),
            Word("there", 1.0, 1.4, WordSource.GAP_FILL),
        ),
        activity=(Activity(0.48, 1.42),),
    )


def _conversation(a: str = "/data/a.wav", b: str = "/data/b.wav") -> Conversation:
    return Conversation(
        "V00_S0001_I00000001",
        SourceKind.SEAMLESS,
        (_speaker(Channel.A, a), _speaker(Channel.B, b)),
        label="naturalistic",
        split="dev",
        metadata={"file_id_a": "x"},
    )


def test_conversation_round_trips_through_json() -> None:
    conv = _conversation()
    text = json.dumps(conv.to_dict())
    again = Conversation.from_dict(json.loads(text))
    assert again == conv
    assert again.to_dict() == conv.to_dict()


def test_dict_names_the_clock_and_version() -> None:
    data = _conversation().to_dict()
    assert data["schema_version"] == CONVERSATION_SCHEMA_VERSION
    word = data["speakers"][0]["words"][0]
    assert set(word) == {"text", "start_conv_s", "end_conv_s", "source", "score"}
    assert word["source"] == "transcript"
    assert data["speakers"][0]["activity"][0] == {"start_conv_s": 0.48, "end_conv_s": 1.42}


def test_word_without_score_round_trips() -> None:
    word = Word("yeah", 2.0, 2.3, WordSource.SYNTHESIS)
    assert "score" not in word.to_dict()
    assert Word.from_dict(word.to_dict()) == word


def test_unknown_schema_version_is_refused() -> None:
    data = _conversation().to_dict()
    data["schema_version"] = 99
    with pytest.raises(ValueError, match="schema version 99"):
        Conversation.from_dict(data)


def test_speakers_must_be_a_then_b() -> None:
    a, b = _conversation().speakers
    with pytest.raises(ValueError, match="A then B"):
        Conversation("x", SourceKind.FOLDER, (b, a))


def test_types_are_frozen() -> None:
    word = Word("hello", 0.5, 0.9)
    with pytest.raises(AttributeError):
        word.text = "bye"  # type: ignore[misc]


def test_duration_is_the_shorter_channel() -> None:
    conv = _conversation()
    assert conv.duration_s == pytest.approx(10.0)
    assert conv.speaker(Channel.B).participant_id.endswith("P0002")


def test_audio_paths_relative_inside_workdir_absolute_outside(tmp_path: Path) -> None:
    inside = tmp_path / "demo-source" / "a.wav"
    conv = _conversation(str(inside), "/elsewhere/b.wav")
    stored = conv.with_audio_paths(tmp_path, relative=True)
    assert stored.speakers[0].audio.path == "demo-source/a.wav"
    assert stored.speakers[1].audio.path == "/elsewhere/b.wav"
    loaded = stored.with_audio_paths(tmp_path, relative=False)
    assert loaded.speakers[0].audio.path == str(tmp_path / "demo-source" / "a.wav")
