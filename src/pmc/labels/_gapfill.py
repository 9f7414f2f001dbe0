"""Gap fill: words for voiced stretches the source transcript left empty (paper section 3.2)."""

from __future__ import annotations

from dataclasses import replace

from pmc import audio
from pmc.asr import Transcriber
from pmc.corpus import Channel, Conversation, Speaker, Word, WordSource

GAP_MIN_S = 0.35
"""Voiced stretches of at least 350 ms without words are transcribed (paper section 3.2)."""
BRIDGE_S = 0.25
"""Activity is joined across gaps up to 250 ms first, as the rule engine does (section 3.2)."""
PAD_S = 0.2
"""Audio kept either side of a stretch, so the recogniser hears whole words."""


def empty_stretches(speaker: Speaker) -> list[tuple[float, float]]:
    """Voiced stretches of at least :data:`GAP_MIN_S` that no transcript word overlaps."""
    stretches: list[list[float]] = []
    for a in sorted(speaker.activity, key=lambda a: a.start_conv_s):
        if stretches and a.start_conv_s - stretches[-1][1] <= BRIDGE_S:
            stretches[-1][1] = max(stretches[-1][1], a.end_conv_s)
        else:
            stretches.append([a.start_conv_s, a.end_conv_s])
    return [
        (start, end)
        for start, end in stretches
        if end - start >= GAP_MIN_S
        and not any(w.start_conv_s < end and w.end_conv_s > start for w in speaker.words)
    ]


def fill_gaps(
    conversation: Conversation, transcriber: Transcriber
) -> tuple[Conversation, dict[Channel, tuple[Word, ...]]]:
    """Transcribe every empty stretch; returns the conversation with the new words, and them.

    A recognised word is kept when its middle falls inside the stretch; it is marked gap-fill.
    """
    speakers = []
    added: dict[Channel, tuple[Word, ...]] = {}
    for speaker in conversation.speakers:
        stretches = empty_stretches(speaker)
        new: list[Word] = []
        if stretches:
            track = audio.read(speaker.audio)
            for start, end in stretches:
                clip_start = max(0.0, start - PAD_S)
                first = round(clip_start * audio.SAMPLE_RATE)
                last = round((end + PAD_S) * audio.SAMPLE_RATE)
                for w in transcriber.transcribe(track[first:last]):
                    w_start, w_end = clip_start + w.start_s, clip_start + w.end_s
                    if start <= (w_start + w_end) / 2 <= end and w_end > w_start:
                        new.append(
                            Word(
                                w.text,
                                round(w_start, 3),
                                round(w_end, 3),
                                WordSource.GAP_FILL,
                                round(w.probability, 3),
                            )
                        )
        added[speaker.channel] = tuple(new)
        words = tuple(sorted((*speaker.words, *new), key=lambda w: (w.start_conv_s, w.end_conv_s)))
        speakers.append(replace(speaker, words=words))
    a, b = speakers
    return replace(conversation, speakers=(a, b)), added
