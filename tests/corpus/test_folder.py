import json
from pathlib import Path

import numpy as np
import pytest

from pmc import audio
from pmc.corpus import Channel, FolderSource, SourceKind, import_corpus, read_corpus
from pmc.errors import Problem


def _tone(seconds: float, freq: float) -> np.ndarray:
    t = np.arange(round(seconds * 16_000)) / 16_000
    return (0.2 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def _words(path: Path, words: list[tuple[str, float, float]], activity: bool = False) -> None:
    data: dict[str, object] = {"words": [{"word": w, "start": s, "end": e} for w, s, e in words]}
    if activity:
        data["activity"] = [{"start": 0.4, "end": 1.6}]
    path.write_text(json.dumps(data))


def test_two_mono_wavs(tmp_path: Path) -> None:
    conv_dir = tmp_path / "corpus" / "call_001"
    conv_dir.mkdir(parents=True)
    (conv_dir / "A.wav").write_bytes(audio.wav_bytes(_tone(2.0, 300), 16_000))
    (conv_dir / "B.wav").write_bytes(audio.wav_bytes(_tone(2.0, 600), 16_000))
    _words(conv_dir / "A.json", [("so", 0.5, 0.7), ("then", 0.8, 1.0), ("we", 1.4, 1.6)])
    _words(conv_dir / "B.json", [("right", 1.1, 1.3)], activity=True)
    (conv,) = [c.load() for c in FolderSource(tmp_path / "corpus").scan().candidates]
    assert (conv.conversation_id, conv.source) == ("call_001", SourceKind.FOLDER)
    a, b = conv.speakers
    assert [w.text for w in a.words] == ["so", "then", "we"]
    # No activity given: word spans with gaps up to 250 ms joined.
    assert [(x.start_conv_s, x.end_conv_s) for x in a.activity] == [(0.5, 1.0), (1.4, 1.6)]
    assert [(x.start_conv_s, x.end_conv_s) for x in b.activity] == [(0.4, 1.6)]
    assert len(audio.read(b.audio)) == 48_000  # 2 s resampled from 16 to 24 kHz


def test_one_stereo_wav(tmp_path: Path) -> None:
    conv_dir = tmp_path / "c" / "stereo_call"
    conv_dir.mkdir(parents=True)
    stereo = np.stack([_tone(1.0, 300), _tone(1.0, 900)], axis=1)
    (conv_dir / "conversation.wav").write_bytes(audio.wav_bytes(stereo, 16_000))
    _words(conv_dir / "A.json", [("hello", 0.1, 0.4)])
    _words(conv_dir / "B.json", [("hi", 0.5, 0.7)])
    summary = import_corpus(FolderSource(tmp_path / "c"), tmp_path / "w", min_duration_s=0)
    assert summary.imported == ["stereo_call"]
    (conv,) = read_corpus(tmp_path / "w")
    assert conv.speaker(Channel.A).audio.channel == 0
    assert conv.speaker(Channel.B).audio.channel == 1
    b = audio.read(conv.speaker(Channel.B).audio)
    spectrum = np.abs(np.fft.rfft(b))
    assert np.fft.rfftfreq(len(b), 1 / 24_000)[np.argmax(spectrum)] == pytest.approx(900, abs=2)


def test_bad_folder_is_skipped_with_its_file(tmp_path: Path) -> None:
    root = tmp_path / "c"
    for name, words_b in (("good", [("hi", 0.5, 0.7)]), ("bad", [("hi", 0.7, 0.5)])):
        folder = root / name
        folder.mkdir(parents=True)
        for side in ("A", "B"):
            (folder / f"{side}.wav").write_bytes(audio.wav_bytes(_tone(1.0, 300), 16_000))
        _words(folder / "A.json", [("yo", 0.1, 0.3)])
        _words(folder / "B.json", words_b)
    summary = import_corpus(FolderSource(root), tmp_path / "w", min_duration_s=0)
    assert summary.imported == ["good"]
    (skipped,) = summary.skipped
    assert skipped.problem is Problem.BAD_WORD_TIMES
    assert skipped.message.startswith(f"{root / 'bad' / 'B.json'}: words[0]: word 'hi'")
