"""Synthetic conversations (activity and words only, no audio) for benchmarks and tests."""

from __future__ import annotations

import numpy as np

from pmc.audio import SAMPLE_RATE, AudioRef
from pmc.corpus import Activity, Channel, Conversation, SourceKind, Speaker, Word


def synthetic_conversation(minutes: float = 12.0, seed: int = 0) -> Conversation:
    """A plausible two-speaker conversation: alternating turns with pauses, backchannels, overlaps.

    Turns last 1 to 12 s in runs of 0.3 to 4 s separated by 0.1 to 1.5 s pauses; the next turn
    starts 0.5 s before to 1.5 s after the last one ended; the listener backchannels now and then.
    Words are spread through every run at about three per second. Deterministic for a seed.
    """
    rng = np.random.default_rng(seed)
    end_s = minutes * 60.0
    stretches: dict[Channel, list[tuple[float, float]]] = {Channel.A: [], Channel.B: []}
    t, speaker = 0.5, Channel.A
    while t < end_s - 15:
        listener = speaker.other
        turn_end = t + rng.uniform(1.0, 12.0)
        while t < turn_end:
            run = rng.uniform(0.3, 4.0)
            stretches[speaker].append((t, t + run))
            if rng.random() < 0.3:
                at = t + rng.uniform(0.0, run)
                stretches[listener].append((at, at + rng.uniform(0.2, 0.8)))
            t += run + rng.uniform(0.1, 1.5)
        t = stretches[speaker][-1][1] + rng.uniform(-0.5, 1.5)
        speaker = listener
    speakers = []
    for channel in Channel:
        merged: list[list[float]] = []
        for start, stop in sorted(stretches[channel]):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], stop)
            else:
                merged.append([start, stop])
        activity = tuple(Activity(round(a, 3), round(b, 3)) for a, b in merged)
        words: list[Word] = []
        for a in activity:
            count = max(1, int(a.duration_s * 3))
            step = a.duration_s / count
            for i in range(count):
                start = a.start_conv_s + i * step
                words.append(Word(f"w{len(words)}", round(start, 3), round(start + 0.8 * step, 3)))
        audio = AudioRef(f"synthetic-{channel.value}.wav", SAMPLE_RATE, int(end_s * SAMPLE_RATE))
        speakers.append(
            Speaker(channel, f"synthetic_{channel.value}", audio, tuple(words), activity)
        )
    a_side, b_side = speakers
    return Conversation(f"synthetic_{seed}", SourceKind.FOLDER, (a_side, b_side))
