"""The fakes' energy endpointer decides on samples alone, whatever the message sizes."""

import numpy as np
import pytest

from pmc.testing.hosted import EnergyEndpointer
from pmc.testing.hosted._endpointer import Change

RATE = 24_000
WINDOW = 480


def stream(*parts: tuple[float, float]) -> np.ndarray:
    """Stretches of (seconds, amplitude): 0 is silence, anything else a loud noise."""
    rng = np.random.default_rng(0)
    chunks = [(amp * rng.uniform(-1, 1, round(s * RATE))).astype(np.float32) for s, amp in parts]
    return np.concatenate(chunks)


def decisions(audio: np.ndarray, sizes: list[int], **settings: float) -> list[tuple[str, int, int]]:
    endpointer = EnergyEndpointer(RATE, **settings)
    out = []
    at = 0
    i = 0
    while at < len(audio):
        size = sizes[i % len(sizes)]
        out += [(e.change.value, e.at, e.decided) for e in endpointer.push(audio[at : at + size])]
        at += size
        i += 1
    return out


def test_speech_starts_and_stops_at_window_edges_after_the_silence_window() -> None:
    audio = stream((0.2, 0), (1.0, 0.3), (0.7, 0))
    found = decisions(audio, [WINDOW], silence_ms=300)
    assert found == [
        ("started", 10 * WINDOW, 11 * WINDOW),
        ("stopped", 60 * WINDOW, 75 * WINDOW),
    ]


def test_prefix_padding_reports_the_start_earlier_and_min_speech_delays_it() -> None:
    audio = stream((0.5, 0), (1.0, 0.3), (0.7, 0))
    padded = decisions(audio, [WINDOW], silence_ms=300, padding_ms=300)
    assert padded[0] == ("started", (25 - 15) * WINDOW, 26 * WINDOW)
    slow = decisions(audio, [WINDOW], silence_ms=300, min_speech_ms=300)
    assert slow[0] == ("started", 25 * WINDOW, 40 * WINDOW)


def test_a_gap_shorter_than_the_silence_window_does_not_end_speech() -> None:
    audio = stream((0.4, 0.3), (0.2, 0), (0.4, 0.3), (0.6, 0))
    found = decisions(audio, [WINDOW], silence_ms=300)
    assert [c for c, _, _ in found] == ["started", "stopped"]
    assert found[1][1] == 50 * WINDOW


@pytest.mark.parametrize("sizes", [[480], [1], [333, 1001, 7], [24_000]])
def test_decisions_do_not_depend_on_how_the_audio_is_cut(sizes: list[int]) -> None:
    audio = stream((0.3, 0), (0.8, 0.2), (0.5, 0), (0.6, 0.2), (0.9, 0))
    assert decisions(audio, sizes, silence_ms=400) == decisions(audio, [480], silence_ms=400)


def test_quiet_audio_is_never_speech() -> None:
    audio = stream((2.0, 0.005))
    assert decisions(audio, [WINDOW], silence_ms=300) == []
    assert Change.STARTED.value == "started"
