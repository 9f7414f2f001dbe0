"""Teacher forcing on our server's engine: exact, and capped from the front (tiny models, CPU)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pmc.duplex_server._align import EPAD, PAD
from pmc.testing.duplex_server import SERVER_ENV, duplex_python, model_args

pytestmark = pytest.mark.slow


def _check(models: Path, *extra: str) -> dict[str, Any]:
    """``python -m pmc.duplex_server check-forcing`` in the duplex environment, its JSON."""
    args = [str(duplex_python()), "-m", "pmc.duplex_server", "check-forcing", "--device", "cpu"]
    done = subprocess.run(
        [*args, *model_args(models, stock=False), *extra],
        check=True,
        capture_output=True,
        text=True,
        env=os.environ | SERVER_ENV,
    )
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_the_prefill_reproduces_every_forced_token_exactly(tiny_models: Path) -> None:
    result = _check(tiny_models, "--frames", "60", "--seed", "3")
    forced, emitted = result["forced"], result["emitted"]
    assert result["report"]["history_frames"] == 60 and result["words"] > 3
    # Frame 0 is the model's initial token; every later frame comes back as forced: the text
    # and each codebook (which the model emits `delays` steps later).
    assert emitted[0] is None
    assert emitted[1:] == forced[1:]
    texts = {f[0] for f in forced}
    codes = {tuple(f[1:]) for f in forced}
    assert len(texts - {PAD, EPAD}) >= 3, "the words' pieces were forced"
    assert len(codes) > 5, "the system's audio codes vary, so matching them means something"
    assert max(result["delays"]) >= 1, "the codebook delays were exercised"


def test_the_history_cap_drops_the_oldest_frames(tiny_models: Path) -> None:
    # 40 frames of history, capped at 25: the first 15 frames (1.2 s) go. A word at 0.2 s lies
    # in them and must vanish; one at 2.5 s (frame 31) must move to frame 31 - 15 = 16.
    words = json.dumps([["coffee", 0.2, 0.5], ["kitten", 2.5, 2.8]])
    full = _check(tiny_models, "--frames", "40", "--words", words)
    capped = _check(tiny_models, "--frames", "40", "--words", words, "--max-history-frames", "25")
    report = capped["report"]
    assert (report["history_frames"], report["truncated_frames"]) == (25, 15)
    assert report["forced_words"] == 1
    kitten = capped["text_pieces"]["kitten"]
    full_text = [f[0] for f in full["forced"]]
    capped_text = [f[0] for f in capped["forced"]]
    assert full_text[31 : 31 + len(kitten)] == kitten
    assert capped_text[16 : 16 + len(kitten)] == kitten
    assert capped_text[15] == EPAD
    # Nothing of the dropped word is left: the capped text is the full text's last 25 frames
    # minus the first word.
    assert capped_text == full_text[15:]
    assert capped["emitted"][1:] == capped["forced"][1:]
