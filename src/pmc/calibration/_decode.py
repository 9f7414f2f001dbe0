"""Windowed decoding: a track tiled with windows, each peak-normalised and decoded on its own.

The recogniser is a :class:`WindowDecoder`; the real one is Whisper through faster-whisper,
whose segment scores (no-speech, log-probability, compression ratio) a
:class:`pmc.asr.Transcriber` does not carry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from pmc.asr import DEFAULT_ASR, WHISPER_RATE, TimedWord, load_whisper_model
from pmc.audio import SAMPLE_RATE, FloatArray, resample
from pmc.calibration._settings import LabelSettings
from pmc.calibration._windows import WindowDecode, WindowSegment
from pmc.errors import PmcError

THREADS_PER_WORKER = 2
"""CTranslate2 threads per transcribing process, as :class:`pmc.asr.FasterWhisper` uses."""


class WindowDecoder(Protocol):
    """What labelling needs from a recogniser: a window's segments, each with its raw scores."""

    def decode(self, audio: FloatArray) -> Sequence[WindowSegment]:
        """Segments of one window, no check applied; word times from the window's start.

        Args:
            audio: The window, mono float32 at :data:`SAMPLE_RATE`, already peak-normalised.
        """
        ...


DecoderLoader = Callable[[str, int], WindowDecoder]
"""``load(asr, threads)``: the decoder an ASR setting names. Worker processes each call it once,
so for more than one worker it must pickle (a module-level function, such as
:func:`load_decoder`)."""


class WhisperWindowDecoder:
    """Whisper on one window: greedy at temperature 0, no context, word timestamps.

    faster-whisper's own filters are off (no threshold given): every decode comes back with its
    raw scores, and the checks are applied when labelling, so they can change without decoding
    again.
    """

    def __init__(self, model: Any) -> None:
        self.model = model
        """A loaded faster-whisper ``WhisperModel``."""

    def decode(self, audio: FloatArray) -> list[WindowSegment]:
        """Segments of one window at :data:`SAMPLE_RATE`; word times from its start."""
        segments, _ = self.model.transcribe(
            resample(audio, SAMPLE_RATE, WHISPER_RATE),
            language="en",
            beam_size=1,
            temperature=0.0,
            condition_on_previous_text=False,
            word_timestamps=True,
            vad_filter=False,
            no_speech_threshold=None,
            log_prob_threshold=None,
            compression_ratio_threshold=None,
        )
        return [
            WindowSegment(
                float(s.no_speech_prob),
                float(s.avg_logprob),
                float(s.compression_ratio),
                tuple(
                    TimedWord(w.word.strip(), float(w.start), float(w.end), float(w.probability))
                    for w in s.words or []
                    if w.word.strip()
                ),
            )
            for s in segments  # a generator: decoding happens here
        ]


def load_decoder(asr: str = DEFAULT_ASR, threads: int = THREADS_PER_WORKER) -> WhisperWindowDecoder:
    """The Whisper window decoder an ASR setting (``faster-whisper:MODEL``) names, loaded."""
    engine, _, model = asr.partition(":")
    if engine != "faster-whisper":
        raise PmcError(
            f"gate calibration needs faster-whisper's segment scores; {asr!r} names another "
            "recogniser"
        )
    return WhisperWindowDecoder(load_whisper_model(model or "tiny.en", threads))


def window_bounds(samples: int, settings: LabelSettings) -> list[tuple[int, int]]:
    """``[start, end)`` sample indices of the windows tiling a track at :data:`SAMPLE_RATE`.

    Windows start every hop until one reaches the end of the track; the last is cut short
    there, so it is never shorter than a hop (a track under one window is one short window).
    """
    width = round(settings.window_s * SAMPLE_RATE)
    hop = round(settings.hop_s * SAMPLE_RATE)
    bounds = []
    start = 0
    while start < samples:
        bounds.append((start, min(start + width, samples)))
        if start + width >= samples:
            break
        start += hop
    return bounds


def decode_track(
    decoder: WindowDecoder, track: FloatArray, settings: LabelSettings
) -> list[WindowDecode]:
    """Decode every window of a played track (mono float32 at :data:`SAMPLE_RATE`).

    A window of digital silence is not decoded (nothing there to normalise); every other one is
    scaled to peak at ``settings.peak`` and decoded on its own.
    """
    decodes = []
    for start, end in window_bounds(len(track), settings):
        piece = track[start:end]
        peak = float(np.max(np.abs(piece))) if piece.size else 0.0
        start_s, end_s = start / SAMPLE_RATE, end / SAMPLE_RATE
        if peak == 0.0:
            decodes.append(WindowDecode(start_s, end_s, 0.0))
            continue
        segments = tuple(
            WindowSegment(
                s.no_speech_prob,
                s.avg_logprob,
                s.compression_ratio,
                tuple(
                    TimedWord(w.text, w.start_s + start_s, w.end_s + start_s, w.probability)
                    for w in s.words
                ),
            )
            for s in decoder.decode(piece * np.float32(settings.peak / peak))
        )
        decodes.append(WindowDecode(start_s, end_s, peak, segments))
    return decodes
