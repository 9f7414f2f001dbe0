"""A rollout's inputs read from the points' files: a point at a conversation's first turn."""

from pathlib import Path

import numpy as np
import pytest

from pmc import io
from pmc.audio import wav_bytes
from pmc.errors import InputError
from pmc.harness import live_for, preload_for
from pmc.testing.points import write_points


def test_a_point_without_history_preloads_empty_audio_and_a_broken_live_cut_says_where(
    tmp_path: Path,
) -> None:
    point = write_points(tmp_path)[0]
    pdir = tmp_path / "points"
    for side in ("history_user", "history_system"):  # the first turn: nothing before it
        io.write_bytes(pdir / point.cuts[side], wav_bytes(np.zeros(0, dtype=np.float32), 24_000))
    preload = preload_for(pdir, point, 0)
    assert len(preload.user_audio) == len(preload.system_audio) == 0
    io.write_bytes(pdir / point.cuts["live"], wav_bytes(np.zeros(0, dtype=np.float32), 24_000))
    with pytest.raises(InputError, match="empty WAV"):
        live_for(pdir, point)
