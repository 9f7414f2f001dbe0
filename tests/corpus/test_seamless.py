from pathlib import Path

import numpy as np
import pytest

from pmc import audio
from pmc.corpus import Channel, Conversation, SeamlessSource, SourceKind, import_corpus, read_corpus
from pmc.corpus._source import FilterReason
from pmc.testing import FakeParticipant, participant, write_extracted, write_raw, write_tar

KEY = "V00_S0809_I00000582"


def _pair(key: str = KEY, **kwargs: object) -> list[FakeParticipant]:
    return [
        participant(f"{key}_P0947", [("hi", 0.5, 0.8), ("you", 0.9, 1.2)], **kwargs),  # type: ignore[arg-type]
        participant(f"{key}_P0012", [("oh", 1.5, 1.7), ("hello", 1.8, 2.2)], **kwargs),  # type: ignore[arg-type]
    ]


def _load_all(root: Path, **kwargs: object) -> list[Conversation]:
    scan = SeamlessSource(root, **kwargs).scan()  # type: ignore[arg-type]
    return [c.load() for c in scan.candidates]


def test_extracted_layout(tmp_path: Path) -> None:
    write_extracted(tmp_path, _pair())
    (conv,) = _load_all(tmp_path)
    assert conv.conversation_id == KEY
    assert conv.source is SourceKind.SEAMLESS
    assert (conv.label, conv.split) == ("naturalistic", "dev")
    # Participants are sorted by id: P0012 is A, P0947 is B.
    a, b = conv.speakers
    assert (a.channel, a.participant_id) == (Channel.A, f"{KEY}_P0012")
    assert [w.text for w in a.words] == ["oh", "hello"]
    assert [w.text for w in b.words] == ["hi", "you"]
    assert a.words[1].start_conv_s == pytest.approx(1.8)
    assert a.words[1].score == pytest.approx(0.9)
    assert [(x.start_conv_s, x.end_conv_s) for x in a.activity] == [(1.5, 1.7), (1.8, 2.2)]
    assert conv.duration_s == pytest.approx(3.0)


@pytest.mark.parametrize("subtype", ["PCM_16", "FLOAT"])
def test_both_sample_formats_read_and_resample(tmp_path: Path, subtype: str) -> None:
    write_extracted(tmp_path, _pair(subtype=subtype))
    (conv,) = _load_all(tmp_path)
    ref = conv.speaker(Channel.A).audio
    assert (ref.subtype, ref.sample_rate) == (subtype, 48_000)
    x = audio.read(ref)
    assert len(x) == 72_000  # 3 s at 24 kHz
    voiced = x[round(1.55 * 24_000) : round(1.65 * 24_000)]
    assert np.sqrt(np.mean(voiced**2)) == pytest.approx(0.3 / np.sqrt(2), rel=0.02)


def test_tar_layout_with_participants_split_across_archives(tmp_path: Path) -> None:
    first, second = _pair()
    other = _pair("V01_S0001_I00000001")
    write_tar(tmp_path, [first, other[0]], archive=0)
    write_tar(tmp_path, [other[1], second], archive=1)
    convs = _load_all(tmp_path)
    assert [c.conversation_id for c in convs] == ["V00_S0809_I00000582", "V01_S0001_I00000001"]
    conv = convs[0]
    paths = {s.audio.path for s in conv.speakers}
    assert {Path(p).name for p in paths} == {"0000.tar", "0001.tar"}
    assert all(s.audio.member and s.audio.member.endswith(".wav") for s in conv.speakers)
    direct = tmp_path / "direct"
    write_extracted(direct, _pair())
    (expected,) = _load_all(direct)
    for got, want in zip(conv.speakers, expected.speakers, strict=True):
        assert got.words == want.words
        np.testing.assert_array_equal(audio.read(got.audio), audio.read(want.audio))


def test_raw_layout(tmp_path: Path) -> None:
    write_raw(tmp_path, _pair(), split="test")
    (conv,) = _load_all(tmp_path)
    assert (conv.label, conv.split) == ("naturalistic", "test")
    assert [w.text for w in conv.speaker(Channel.B).words] == ["hi", "you"]
    assert len(conv.speaker(Channel.A).activity) == 2


def test_participant_without_transcript_has_no_words(tmp_path: Path) -> None:
    a, b = _pair()
    write_extracted(tmp_path, [a, type(b)(b.file_id, b.audio, transcript=[], vad=b.vad)])
    (conv,) = _load_all(tmp_path)
    assert conv.speaker(Channel.A).words == ()
    assert len(conv.speaker(Channel.A).activity) == 2


def test_label_filter(tmp_path: Path) -> None:
    write_extracted(tmp_path, _pair(), label="naturalistic")
    write_extracted(tmp_path, _pair("V02_S0002_I00000002"), label="improvised")
    scan = SeamlessSource(tmp_path).scan()
    assert [c.item for c in scan.candidates] == [KEY]
    assert [(f.item, f.reason) for f in scan.filtered] == [
        ("V02_S0002_I00000002", FilterReason.LABEL)
    ]
    every = SeamlessSource(tmp_path, label="any").scan()
    assert len(every.candidates) == 2


def test_minimum_duration_filter_uses_the_audio(tmp_path: Path) -> None:
    write_extracted(tmp_path / "src", _pair(duration_s=3.0))
    write_extracted(tmp_path / "src", _pair("V03_S0003_I00000003", duration_s=5.0))
    summary = import_corpus(SeamlessSource(tmp_path / "src"), tmp_path / "w", min_duration_s=4.0)
    assert summary.imported == ["V03_S0003_I00000003"]
    assert [(f.item, f.reason) for f in summary.filtered] == [(KEY, FilterReason.TOO_SHORT)]
    (stored,) = read_corpus(tmp_path / "w")
    assert stored.conversation_id == "V03_S0003_I00000003"
    assert stored.duration_s == pytest.approx(5.0)


def test_default_minimum_is_seven_minutes(tmp_path: Path) -> None:
    write_extracted(tmp_path / "src", _pair())
    summary = import_corpus(SeamlessSource(tmp_path / "src"), tmp_path / "w")
    assert summary.min_duration_s == 420.0
    assert summary.imported == []
    assert summary.readable == 1
