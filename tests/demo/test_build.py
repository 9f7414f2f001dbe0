import hashlib
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import pmc.demo._build as demo_module
from pmc.cli import cli
from pmc.corpus import Channel, SeamlessSource, import_corpus, read_corpus
from pmc.demo import build_demo

SCRIPTS = {
    "01_a.txt": """title: Lake
fact_speaker: B
fact: her dog is called Biscuit
question: What is my sister's dog called?
answer: Biscuit
---
A: How was the lake?
B +0.4: Lovely. My sister came, and her dog is called Biscuit. <pause 0.9 mid> He swam \
<bc yeah> all day long.
A -0.3: That sounds great. <pause 1.8 take: wait did he> Was it cold?
B +1.0: Freezing, but he did not care.
""",
    "02_b.txt": """title: Bus
fact_speaker: A
fact: the bus was forty minutes late
question: How late did you say the bus was?
answer: forty minutes
---
A: Sorry, the bus was forty minutes late. <pause 0.5> Again.
B: Oh no. <pause 1.2> Did you wait outside?
A +0.8: Yes, in the rain, mm-hm.
""",
}


def _scripts(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "scripts"
    folder.mkdir()
    for name, text in SCRIPTS.items():
        (folder / name).write_text(text)
    return sorted(folder.iterdir())


def _checksums(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    base = tmp_path_factory.mktemp("demo")
    scripts = _scripts(base)
    build_demo(base / "one", scripts=scripts)
    return base, scripts


def test_same_bytes_in_two_folders_built_in_one_process_or_one_per_conversation(
    built: tuple[Path, list[Path]],
) -> None:
    base, scripts = built
    build_demo(base / "two", scripts=scripts, workers=2)
    one, two = _checksums(base / "one"), _checksums(base / "two")
    assert (
        len(one) == 2 * 4 + 2 + 1
    )  # 2 conversations x 2 participants x (wav, json) + truth + cache
    assert one == two


def test_written_in_the_seamless_layout_and_read_back_exactly(
    built: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    base, _ = built
    names = sorted(p.relative_to(base / "one").as_posix() for p in (base / "one").rglob("*.wav"))
    assert names[0] == "naturalistic/dev/0000/0000/V99_S0001_I00000001_P0001.wav"
    summary = import_corpus(SeamlessSource(base / "one"), tmp_path, min_duration_s=0)
    assert summary.imported == ["V99_S0001_I00000001", "V99_S0001_I00000002"]
    conv = read_corpus(tmp_path)[0]
    truth = json.loads((base / "one" / "ground_truth" / f"{conv.conversation_id}.json").read_text())
    assert truth["recall"]["answer"] == "Biscuit"
    turns = [e for e in truth["events"] if e["kind"] == "turn"]
    a_words = [w.text for w in conv.speaker(Channel.A).words]
    b_words = [w.text for w in conv.speaker(Channel.B).words]
    # Each side's words are its turns plus what it said while listening: A's backchannel
    # during B's turn, B's failed take during A's pause.
    assert a_words == "How was the lake? yeah That sounds great. Was it cold?".split()
    assert b_words[-9:] == "wait did he Freezing, but he did not care.".split()
    for turn in turns:
        words = conv.speaker(Channel(turn["speaker"])).words
        inside = [
            w.text
            for w in words
            if turn["start_conv_s"] <= w.start_conv_s and w.end_conv_s <= turn["end_conv_s"]
        ]
        assert inside == turn["text"].split()
    pauses = [e for e in truth["events"] if e["kind"] == "pause" and e["origin"] == "scripted"]
    assert [round(e["end_conv_s"] - e["start_conv_s"], 3) for e in pauses] == [0.9, 1.8]
    # Every word lies inside the voice activity, on its 10 ms grid.
    for speaker in conv.speakers:
        for w in speaker.words:
            assert any(
                a.start_conv_s <= w.start_conv_s and w.end_conv_s <= a.end_conv_s
                for a in speaker.activity
            ), w


def test_cached_build_is_reused_and_a_damaged_file_is_rebuilt(
    built: tuple[Path, list[Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    base, scripts = built
    out = base / "cache"
    build_demo(out, scripts=scripts)
    before = _checksums(out)
    calls: list[str] = []
    real = demo_module._build_one

    def counting(out_dir: Path, conv: demo_module.DemoConversation, script: object) -> object:
        calls.append(conv.interaction)
        return real(out_dir, conv, script)  # type: ignore[arg-type]

    monkeypatch.setattr(demo_module, "_build_one", counting)
    build_demo(out, scripts=scripts)
    assert calls == []
    wav = next(out.rglob("V99_S0001_I00000002_P0003.wav"))
    wav.write_bytes(wav.read_bytes()[:-10])
    build_demo(out, scripts=scripts)
    assert calls == ["V99_S0001_I00000002"]
    assert _checksums(out) == before


@pytest.mark.slow
def test_bundled_demo_corpus(demo_workdir: Path) -> None:
    """The whole bundled demo, through the CLI: size, lengths, and where the facts fall."""
    conversations = read_corpus(demo_workdir)
    assert len(conversations) >= 8
    durations = [c.duration_s for c in conversations]
    assert all(120 <= d <= 240 for d in durations), durations
    assert sum(durations) >= 20 * 60
    truths = sorted((demo_workdir / "demo-source" / "ground_truth").glob("*.json"))
    assert len(truths) == len(conversations)  # one ground truth per conversation
    for truth_path in truths:
        events = json.loads(truth_path.read_text())["events"]
        (fact,) = [e for e in events if e["kind"] == "fact"]
        assert fact["end_conv_s"] <= 30.0
        kinds = {e["kind"] for e in events}
        assert kinds == {
            "turn",
            "pause",
            "turn_end",
            "backchannel",
            "failed_take",
            "overlap",
            "barge_in",
            "fact",
        }
    info = CliRunner().invoke(cli, ["corpus", "info", "--workdir", str(demo_workdir)])
    assert info.exit_code == 0
    assert re.search(rf"conversations\s*\S\s*{len(conversations)}\b", info.output)
