"""Each distinct clip is recognised once, and a remembered clip gives exactly the words heard.

Runs repeat clips (the person and the shuffled person replay the same replies, always-speak its
monologue, an agent its canned answer), so scoring keeps each clip's words by its samples. A
counting recogniser shows which clips reached it; the words must come back unchanged, floats
included, from memory and from the folder a pool's processes share.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pmc.asr import TimedWord, Transcriber
from pmc.audio import FloatArray
from pmc.scoring import RememberingTranscriber, clip_digest


class Counting(Transcriber):
    """Words that depend on the samples (their sum), and a count of the clips it was given."""

    def __init__(self, spec: str = "counting:1") -> None:
        self.spec = spec
        self.heard: list[int] = []

    def transcribe(self, audio: FloatArray) -> list[TimedWord]:
        self.heard.append(len(audio))
        total = float(np.sum(audio, dtype=np.float64))
        return [
            TimedWord(f"sum{total:.3f}", 0.1 + total / 7, 0.3 + total / 3, 1 / 3),
            TimedWord("len", len(audio) / 24_000, len(audio) / 12_000, 0.987654321),
        ]


def clip(seed: int, n: int = 4800) -> FloatArray:
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


def test_a_clip_heard_before_is_not_heard_again_and_gives_the_same_words() -> None:
    inner = Counting()
    memo = RememberingTranscriber(inner)
    first = memo.transcribe(clip(1))
    again = memo.transcribe(clip(1).copy())  # equal samples, another array
    other = memo.transcribe(clip(2))
    assert inner.heard == [4800, 4800]
    assert again == first == inner.transcribe(clip(1))
    assert other != first
    assert memo.recognised == 2
    assert memo.spec == "counting:1"


def test_one_sample_more_or_changed_is_another_clip() -> None:
    inner = Counting()
    memo = RememberingTranscriber(inner)
    base = clip(3)
    changed = base.copy()
    changed[100] = np.nextafter(changed[100], np.float32(np.inf))
    for audio in (base, changed, np.concatenate([base, np.zeros(1, np.float32)])):
        memo.transcribe(audio)
    assert len(inner.heard) == 3
    assert len({clip_digest("s", base), clip_digest("s", changed), clip_digest("t", base)}) == 3


def test_processes_of_one_pool_share_what_they_heard(tmp_path: Path) -> None:
    one, two = Counting(), Counting()
    words = RememberingTranscriber(one, tmp_path).transcribe(clip(4))
    assert RememberingTranscriber(two, tmp_path).transcribe(clip(4)) == words  # exact floats
    assert (len(one.heard), len(two.heard)) == (1, 0)
    assert [p.name for p in tmp_path.iterdir()] == [f"{clip_digest('counting:1', clip(4))}.json"]


def test_another_recogniser_setting_never_reads_these_words(tmp_path: Path) -> None:
    RememberingTranscriber(Counting("a:tiny"), tmp_path).transcribe(clip(5))
    other = Counting("a:base")
    RememberingTranscriber(other, tmp_path).transcribe(clip(5))
    assert len(other.heard) == 1


def test_memory_is_bounded_and_what_it_dropped_is_heard_again() -> None:
    inner = Counting()
    memo = RememberingTranscriber(inner, keep=2)
    for seed in (1, 2, 3, 3, 1):
        memo.transcribe(clip(seed))
    assert len(inner.heard) == 4  # clip 1 was dropped when clip 3 came, so it is heard again
