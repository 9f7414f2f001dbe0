"""A plain folder format for a user's own two-channel corpus.

One sub-folder per conversation; its name is the conversation id::

    my_corpus/
      call_001/
        A.wav  B.wav          one mono WAV per speaker (or conversation.wav with two channels:
                              channel 0 is A, channel 1 is B)
        A.json B.json         {"words": [{"word": "hello", "start": 0.52, "end": 0.81}, ...],
                               "activity": [{"start": 0.50, "end": 2.10}, ...]}

Times are seconds from the start of the audio. ``activity`` (voice activity) is optional; without
it, activity is the word spans with gaps up to :data:`WORD_BRIDGE_S` joined.
"""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import ClassVar

from pmc import audio
from pmc.corpus._records import (
    WordStats,
    activity_from_words,
    check_fits_audio,
    decode_json_text,
    located_list,
    parse_activity,
    parse_words,
)
from pmc.corpus._source import CorpusSource, FoundConversation, Scan, Skipped
from pmc.corpus._types import Channel, Conversation, SourceKind, Speaker
from pmc.errors import InputError, Problem

STEREO_NAME = "conversation.wav"
WORD_BRIDGE_S = 0.25
"""Gaps up to 250 ms between words count as one stretch of activity: the same bridge the label
engine applies to voice activity (paper section 3.2)."""
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_FORMAT_FILES = (STEREO_NAME, *(f"{c.value}.{ext}" for c in Channel for ext in ("wav", "json")))


class FolderSource(CorpusSource):
    """Reads the plain folder format described in this module's docstring.

    Args:
        root: The folder holding one sub-folder per conversation.
        lenient_words: Drop words with end <= start instead of skipping their conversation.
    """

    kind: ClassVar[SourceKind] = SourceKind.FOLDER

    def __init__(self, root: Path, *, lenient_words: bool = False) -> None:
        self.root = root
        self.lenient_words = lenient_words
        self.word_stats = WordStats()

    def scan(self) -> Scan:
        """One candidate per sub-folder that holds any of the format's files.

        A folder with audio but no words file is a conversation missing its words (reported
        when it is read), not something else to pass over; only folders holding none of the
        format's files (``.git``, notes) are not looked at.
        """
        scan = Scan(word_stats=self.word_stats)
        for folder in sorted(p for p in self.root.iterdir() if p.is_dir()):
            if not any((folder / name).exists() for name in _FORMAT_FILES):
                continue
            if not _SAFE_ID.match(folder.name):
                message = f"{folder}: folder name is not usable as a conversation id"
                scan.skipped.append(Skipped(folder.name, Problem.BAD_RECORD, message))
                continue
            scan.candidates.append(FoundConversation(folder.name, partial(self.load, folder)))
        return scan

    def load(self, folder: Path) -> Conversation:
        """Read one conversation folder."""
        a, b = (self.speaker(folder, channel) for channel in Channel)
        return Conversation(folder.name, SourceKind.FOLDER, (a, b))

    def speaker(self, folder: Path, channel: Channel) -> Speaker:
        """Read one speaker's audio header, words and activity."""
        stereo = folder / STEREO_NAME
        if stereo.exists():
            ref = audio.probe(stereo, channel=0 if channel is Channel.A else 1)
        else:
            ref = audio.probe(folder / f"{channel.value}.wav")
        words_path = folder / f"{channel.value}.json"
        try:
            raw = words_path.read_bytes()
        except OSError as exc:
            raise InputError(
                words_path, f"cannot read ({exc.strerror})", problem=Problem.MISSING_FILE
            ) from None
        data = decode_json_text(raw, str(words_path))
        if not isinstance(data, dict) or "words" not in data:
            raise InputError(words_path, "expected an object with a 'words' list")
        words = parse_words(
            located_list(data["words"], str(words_path), "words"),
            str(words_path),
            words_key=None,
            lenient=self.lenient_words,
            stats=self.word_stats,
        )
        if "activity" in data:
            items = located_list(data["activity"], str(words_path), "activity")
            activity = parse_activity(items, str(words_path))
        else:
            activity = activity_from_words(words, WORD_BRIDGE_S)
        check_fits_audio(words, activity, ref.duration_s, ref.display)
        return Speaker(channel, f"{folder.name}_{channel.value}", ref, words, activity)
