"""A small working directory ready for ``pmc review``: corpus, labels and points, in seconds.

Two conversations in Seamless Interaction's real layout, each with a mid-turn pause of A and
two turn ends answered with five words or more, taken through the real label and points
stages. Words can be given text of your own (markup, for the escaping tests).
"""

from __future__ import annotations

from pathlib import Path

from pmc.corpus import SeamlessSource, import_corpus
from pmc.labels import run_labels
from pmc.points import run_points
from pmc.testing.seamless import participant, write_extracted

KEYS = ("V00_S0001_I00000001", "V00_S0001_I00000002")
DURATION_S = 16.0


def _words(start: float, end: float, n: int, tag: str) -> list[tuple[str, float, float]]:
    step = (end - start) / n
    return [(f"{tag}{i}", start + i * step, start + (i + 0.8) * step) for i in range(n)]


def review_workdir(folder: Path, first_word: str = "so") -> Path:
    """Build ``folder/w``: two conversations, labelled, with their points; returns it.

    Args:
        folder: An empty folder for the sources and the working directory.
        first_word: The text of A's first word in the first conversation.
    """
    for n, key in enumerate(KEYS):
        a = [*_words(0.5, 3.5, 8, "a"), *_words(4.5, 6.0, 4, "b"), *_words(9.3, 11.5, 6, "c")]
        if n == 0:
            a[0] = (first_word, a[0][1], a[0][2])
        b = [*_words(6.3, 9.0, 7, "x"), *_words(11.8, 14.0, 6, "y")]
        write_extracted(
            folder / "src",
            [
                participant(f"{key}_P{2 * n + 1:04d}", a, duration_s=DURATION_S),
                participant(
                    f"{key}_P{2 * n + 2:04d}", b, duration_s=DURATION_S, frequency_hz=330.0
                ),
            ],
        )
    workdir = folder / "w"
    import_corpus(SeamlessSource(folder / "src"), workdir, min_duration_s=0)
    run_labels(workdir, asr=None)
    run_points(workdir, draw=2)
    return workdir
