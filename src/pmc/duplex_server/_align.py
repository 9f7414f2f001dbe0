"""The system's words as one text token per 80 ms frame, the way Moshi's text stream runs.

Moshi's inner monologue carries one SentencePiece token per 12.5 Hz frame: padding (PAD) while
nothing is said, an end-of-padding marker (EPAD) on the padding frame just before a run of word
tokens, then the word's pieces on consecutive frames (docs/decisions.md
section 1, "Duplex text alignment"). A word starts on the frame its start time falls in; pieces that
do not fit before the next word push it later, so no piece is ever dropped inside the history.
Plain Python: the tokenizer is passed in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from pmc.duplex_server._wire import FRAME_RATE_HZ

PAD = 3
"""Moshi's text padding id (``existing_text_padding_id`` in moshi's LM config)."""
EPAD = 0
"""Moshi's end-of-padding id (the LM's ``end_of_text_padding_id``)."""

TimedText = tuple[str, float, float]
"""A word and its start and end, in seconds on the aligned timeline."""


def align_words(
    words: Sequence[TimedText],
    frames: int,
    tokenize: Callable[[str], list[int]],
    offset_frames: int = 0,
) -> list[int]:
    """One text token per frame for ``frames`` frames.

    Args:
        words: The words, on a timeline whose 0 is frame ``offset_frames``.
        frames: Frames in the result.
        tokenize: A word's token ids (SentencePiece, ``▁`` first piece included).
        offset_frames: Frames before the words' timeline (a prompt forced ahead of them).
    """
    tokens = [PAD] * frames
    free = 0  # the first frame no earlier word occupies
    for text, start_s, _end_s in sorted(words, key=lambda w: w[1]):
        if start_s < 0:
            continue  # begun before the (capped) history: its start is not heard
        pieces = tokenize(text)
        first = max(offset_frames + math.floor(start_s * FRAME_RATE_HZ), free)
        if not pieces or first >= frames:
            continue
        if first > free and tokens[first - 1] == PAD:
            tokens[first - 1] = EPAD
        for i, piece in enumerate(pieces[: frames - first]):
            tokens[first + i] = piece
        free = min(frames, first + len(pieces))
    return tokens


def prompt_tokens(prompt: str, tokenize: Callable[[str], list[int]]) -> list[int]:
    """An identity prompt as PersonaPlex frames it (``<system> ... <system>``); none if empty."""
    if not prompt.strip():
        return []
    return tokenize(f"<system> {prompt.strip()} <system>")
