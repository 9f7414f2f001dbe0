"""The text timeline the server forces, and what the preload adapter sends (no PyTorch)."""

from __future__ import annotations

import json

import numpy as np

from pmc.duplex_server._align import EPAD, PAD, align_words, prompt_tokens
from pmc.duplex_server._wire import HISTORY_CHUNK_BYTES, Kind
from pmc.systems import HistoryWord, Preload
from pmc.systems._duplex_client._preloaded import _chunks, preload_header


def _letters(text: str) -> list[int]:
    """A stand-in tokenizer: one token per letter (ids from 10 up)."""
    return [10 + ord(c) - ord("a") for c in text.lower() if c.isalpha()]


def test_a_word_starts_on_its_frame_after_an_end_of_padding_marker() -> None:
    tokens = align_words([("ab", 0.40, 0.6)], 10, _letters)
    # 0.40 s is frame 5 at 12.5 Hz; EPAD on frame 4, the pieces on frames 5 and 6.
    assert tokens == [PAD, PAD, PAD, PAD, EPAD, 10, 11, PAD, PAD, PAD]


def test_pieces_that_do_not_fit_push_the_next_word_later() -> None:
    tokens = align_words([("abc", 0.0, 0.1), ("d", 0.08, 0.2)], 6, _letters)
    # "abc" fills frames 0-2; "d" (due on frame 1) follows at once, without a marker.
    assert tokens == [10, 11, 12, 13, PAD, PAD]


def test_words_begun_before_the_history_and_after_it_are_left_out() -> None:
    tokens = align_words([("a", -0.1, 0.1), ("b", 0.8, 1.0)], 5, _letters)
    assert tokens == [PAD] * 5


def test_a_prompt_offsets_the_words() -> None:
    prompt = prompt_tokens("hi", _letters)
    tokens = align_words([("a", 0.0, 0.1)], len(prompt) + 3, _letters, len(prompt))
    assert tokens[len(prompt) - 1 :] == [EPAD, 10, PAD, PAD]
    assert prompt_tokens("   ", _letters) == []


def test_the_preload_header_and_history_chunks() -> None:
    user = np.full(HISTORY_CHUNK_BYTES, 0.5, dtype=np.float32)  # two chunks of PCM16
    preload = Preload(
        "You are Sam.",
        user,
        np.zeros_like(user),
        [],
        seed=7,
        system_words=(HistoryWord("hello", 1.0, 1.4),),
    )
    header = preload_header(preload, identity_prompt=True, send_seed=True, max_history_frames=2048)
    assert header[0] == Kind.PRELOAD
    body = json.loads(header[1:])
    assert body["text_prompt"] == "You are Sam." and body["seed"] == 7
    assert body["words"] == [["hello", 1.0, 1.4]] and body["max_history_frames"] == 2048
    assert body["user_samples"] == len(user)
    chunks = _chunks(Kind.USER_HISTORY, user)
    assert len(chunks) == 2 and all(c[0] == Kind.USER_HISTORY for c in chunks)
    assert sum(len(c) - 1 for c in chunks) == 2 * len(user)
    silent = preload_header(
        preload, identity_prompt=False, send_seed=False, max_history_frames=None
    )
    assert json.loads(silent[1:])["text_prompt"] == ""
