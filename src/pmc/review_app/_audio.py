"""The players' audio: a stretch of a conversation as stereo WAV, the person on the left.

Made from the corpus's own audio on request and kept for the last few clips, so that the
browser's range requests (seeking, replaying the last 3 s) do not make it again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from pmc import audio
from pmc.corpus import Channel, Conversation

CACHED_CLIPS = 4
"""A window's clip, the next one the reviewer opens, and a conversation or two."""


class StereoClips:
    """Stereo WAV bytes of conversation stretches, cached by (conversation, start, end, left)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[str, float, float, Channel], bytes] = OrderedDict()

    def wav(self, conversation: Conversation, start_s: float, end_s: float, left: Channel) -> bytes:
        """``[start_s, end_s)`` of ``conversation`` on the conversation clock, as 16-bit WAV."""
        key = (conversation.conversation_id, start_s, end_s, left)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        first = max(0, round(start_s * audio.SAMPLE_RATE))
        last = max(first, round(end_s * audio.SAMPLE_RATE))
        sides = []
        for channel in (left, left.other):
            track = audio.read(conversation.speaker(channel).audio)[first:last]
            sides.append(np.pad(track, (0, last - first - len(track))))
        data = audio.wav_bytes(audio.to_pcm16(np.stack(sides, axis=1)), audio.SAMPLE_RATE)
        with self._lock:
            self._cache[key] = data
            while len(self._cache) > CACHED_CLIPS:
                self._cache.popitem(last=False)
        return data
