"""Seamless Interaction in its three real layouts (docs/wire-formats.md section 1).

- extracted: ``{label}/{split}/{batch}/{archive}/{file_id}.{wav,json}``, the JSON holding
  ``metadata:transcript`` and ``metadata:vad``;
- WebDataset tars: ``{label}/{split}/{batch}/{archive}.tar``, members ``{file_id}.{wav,json,...}``;
- raw: ``audio/{file_id}.wav``, ``metadata/transcript/{file_id}.jsonl``,
  ``metadata/vad/{file_id}.jsonl``.

One file id is one participant; the two participants sharing an interaction key
(``V.._S.._I..``) are one conversation, wherever their files sit (they may be in different tars).
"""

from __future__ import annotations

import re
import tarfile
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import ClassVar

from pmc import audio
from pmc.corpus._records import (
    Located,
    WordStats,
    check_fits_audio,
    decode_json_text,
    located_list,
    parse_activity,
    parse_words,
    read_jsonl,
)
from pmc.corpus._source import (
    CorpusSource,
    Filtered,
    FilterReason,
    FoundConversation,
    Scan,
    Skipped,
)
from pmc.corpus._types import Channel, Conversation, SourceKind, Speaker
from pmc.errors import InputError, Problem

FILE_ID = re.compile(r"^(?P<key>V\d+_S\d+_I\d+)_P(?P<participant>\d+[A-Za-z]*)$")
"""A participant's file id; the key before ``_P`` names the interaction."""

SEAMLESS_LABELS = ("naturalistic", "improvised")
SPLITS = ("dev", "test", "train")
TRANSCRIPT_KEY = "metadata:transcript"
VAD_KEY = "metadata:vad"
ANY_SEAMLESS_LABEL = "any"


@dataclass
class _Participant:
    """Where one participant's files are, gathered from whichever layout holds them."""

    file_id: str
    label: str | None = None
    split: str | None = None
    wav: Path | None = None
    wav_member: tuple[str, int, int] | None = None  # (member name, data offset, data size)
    json_path: str | None = None
    json_bytes: bytes | None = None  # tar members are read during the scan
    transcript_jsonl: Path | None = None
    vad_jsonl: Path | None = None
    origins: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        match = FILE_ID.match(self.file_id)
        return match.group("key") if match else self.file_id


def _label_split(path: Path) -> tuple[str | None, str | None]:
    """The label and split named by the directories above ``path``, nearest first."""
    label = next((p for p in reversed(path.parts) if p in SEAMLESS_LABELS), None)
    split = next((p for p in reversed(path.parts) if p in SPLITS), None)
    return label, split


class SeamlessSource(CorpusSource):
    """Reads Seamless Interaction from a folder holding any mix of its three layouts.

    Args:
        root: The folder to search.
        label: Keep only this subset (``naturalistic`` by default; ``any`` keeps all).
        lenient_words: Drop words with end <= start instead of skipping their conversation.
    """

    kind: ClassVar[SourceKind] = SourceKind.SEAMLESS

    def __init__(
        self, root: Path, *, label: str = "naturalistic", lenient_words: bool = False
    ) -> None:
        self.root = root
        self.label = label
        self.lenient_words = lenient_words
        self.word_stats = WordStats()

    # -- scanning ---------------------------------------------------------------------------

    def scan(self) -> Scan:
        """Find participants in every layout under the root and pair them by interaction."""
        scan = Scan(word_stats=self.word_stats)
        people: dict[str, _Participant] = {}

        def person(file_id: str, where: Path) -> _Participant:
            p = people.setdefault(file_id, _Participant(file_id))
            if p.label is None:
                p.label, p.split = _label_split(where)
            return p

        for path in sorted(self.root.rglob("*")):
            if not path.is_file():
                continue
            # Hidden files and folders are not the corpus: fetch's shard cache (.pmc-fetch/).
            if any(part.startswith(".") for part in path.relative_to(self.root).parts):
                continue
            if path.suffix == ".tar":
                self._scan_tar(path, person, scan)
                continue
            stem, suffix = path.stem, path.suffix
            if not FILE_ID.match(stem):
                continue
            parent = path.parent
            if suffix == ".wav" and parent.name == "audio":
                person(stem, parent).wav = path  # raw layout
            elif suffix == ".jsonl" and parent.name == "transcript":
                person(stem, parent.parent.parent).transcript_jsonl = path
            elif suffix == ".jsonl" and parent.name == "vad":
                person(stem, parent.parent.parent).vad_jsonl = path
            elif suffix == ".wav":
                person(stem, parent).wav = path  # extracted layout
            elif suffix == ".json":
                person(stem, parent).json_path = str(path)

        groups: dict[str, list[_Participant]] = defaultdict(list)
        for p in people.values():
            groups[p.key].append(p)
        for key in sorted(groups):
            members = sorted(groups[key], key=lambda p: p.file_id)
            label = next((p.label for p in members if p.label), None)
            if self.label != ANY_SEAMLESS_LABEL and label != self.label:
                scan.filtered.append(Filtered(key, FilterReason.LABEL))
                continue
            if len(members) != 2:
                names = ", ".join(p.file_id for p in members)
                where = members[0].json_path or str(members[0].wav or self.root)
                message = f"interaction {key} has {len(members)} participant(s) ({names})"
                scan.skipped.append(Skipped(key, Problem.UNPAIRED, f"{where}: {message}"))
                continue
            scan.candidates.append(FoundConversation(key, partial(self.load, key, label, members)))
        return scan

    def _scan_tar(
        self, path: Path, person: Callable[[str, Path], _Participant], scan: Scan
    ) -> None:
        """Take the participants of one WebDataset shard, or none of them if it is damaged.

        A shard must read to its end-of-archive marker; one cut short (an interrupted download)
        or with a damaged header is skipped whole and reported once, so that no participant is
        taken from it with audio that stops early or without its other files.
        """
        wavs: dict[str, tuple[str, int, int]] = {}  # file id -> (member, data offset, size)
        jsons: dict[str, tuple[str, bytes]] = {}  # file id -> (member, its bytes)
        try:
            with tarfile.open(path, "r:") as archive:
                end = 0
                for member in archive:
                    end = member.offset_data + _whole_blocks(member.size)
                    if not member.isfile():
                        continue
                    name = Path(member.name).name
                    stem, _, ext = name.partition(".")
                    if not FILE_ID.match(stem):
                        continue
                    if ext == "wav":
                        wavs[stem] = (member.name, member.offset_data, member.size)
                    elif ext == "json":
                        handle = archive.extractfile(member)
                        if handle is not None:
                            jsons[stem] = (member.name, handle.read())
            _check_end_marker(path, end)
        except (tarfile.TarError, OSError) as exc:
            message = f"{path}: unreadable tar archive ({exc})"
            scan.skipped.append(Skipped(str(path), Problem.BAD_ARCHIVE, message))
            return
        for stem, wav_member in wavs.items():
            p = person(stem, path.parent)
            p.wav, p.wav_member = path, wav_member
        for stem, (member_name, raw) in jsons.items():
            p = person(stem, path.parent)
            p.json_path, p.json_bytes = f"{path}:{member_name}", raw

    # -- loading ----------------------------------------------------------------------------

    def load(self, key: str, label: str | None, members: list[_Participant]) -> Conversation:
        """Read and check one interaction's two participants."""
        a, b = (self._speaker(p, channel) for p, channel in zip(members, Channel, strict=True))
        return Conversation(
            conversation_id=key,
            source=SourceKind.SEAMLESS,
            speakers=(a, b),
            label=label,
            split=members[0].split,
            metadata={"file_id_a": members[0].file_id, "file_id_b": members[1].file_id},
        )

    def _speaker(self, p: _Participant, channel: Channel) -> Speaker:
        if p.wav is None:
            raise InputError(_expected_wav(p), "missing WAV", problem=Problem.MISSING_FILE)
        if p.wav_member is not None:
            name, offset, size = p.wav_member
            ref = audio.probe(p.wav, member=name, member_offset=offset, member_size=size)
        else:
            ref = audio.probe(p.wav)
        transcript, transcript_file, vad, vad_file = self._records(p)
        words = parse_words(
            transcript,
            transcript_file,
            words_key="words",
            lenient=self.lenient_words,
            stats=self.word_stats,
        )
        activity = parse_activity(vad, vad_file)
        check_fits_audio(words, activity, ref.duration_s, ref.display)
        return Speaker(channel, p.file_id, ref, words, activity)

    def _records(self, p: _Participant) -> tuple[list[Located], str, list[Located], str]:
        """Transcript records and their file, then voice-activity records and their file."""
        if p.json_path is not None:
            raw = p.json_bytes
            if raw is None:
                try:
                    raw = Path(p.json_path).read_bytes()
                except OSError as exc:
                    raise InputError(
                        p.json_path, f"cannot read ({exc.strerror})", problem=Problem.MISSING_FILE
                    ) from None
            data = decode_json_text(raw, p.json_path)
            if not isinstance(data, dict):
                raise InputError(p.json_path, "top level is not a JSON object")
            if VAD_KEY not in data:
                raise InputError(
                    p.json_path,
                    f"missing voice activity ('{VAD_KEY}')",
                    problem=Problem.MISSING_VAD,
                )
            transcript = located_list(data.get(TRANSCRIPT_KEY) or [], p.json_path, TRANSCRIPT_KEY)
            vad = located_list(data[VAD_KEY], p.json_path, VAD_KEY)
            return transcript, p.json_path, vad, p.json_path
        if p.vad_jsonl is None:
            base = p.wav.parent.parent if p.wav else self.root
            raise InputError(
                base / "metadata" / "vad" / f"{p.file_id}.jsonl",
                "missing voice-activity file",
                problem=Problem.MISSING_VAD,
            )
        transcript = read_jsonl(p.transcript_jsonl) if p.transcript_jsonl else []
        return transcript, str(p.transcript_jsonl), read_jsonl(p.vad_jsonl), str(p.vad_jsonl)


def _expected_wav(p: _Participant) -> str:
    """Where a participant's missing WAV should be, in the layout its other files are in."""
    if p.json_path is not None:  # extracted (beside the JSON) or tar (beside the JSON member)
        return p.json_path.removesuffix(".json") + ".wav"
    meta = p.transcript_jsonl or p.vad_jsonl
    if meta is None:
        return p.file_id
    return str(meta.parents[2] / "audio" / f"{p.file_id}.wav")  # raw: base/metadata/kind/


def _whole_blocks(size: int) -> int:
    """``size`` rounded up to whole tar blocks: a member's data with its padding."""
    return -(-size // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE


def _check_end_marker(path: Path, end: int) -> None:
    """Raise unless a zero block (the end-of-archive marker) follows the last member's data.

    :mod:`tarfile` stops quietly at a header it cannot parse or that the file cuts off, and so
    would take a shard cut at a member boundary, or damaged in a header, as complete.
    """
    with path.open("rb") as handle:
        handle.seek(end)
        block = handle.read(tarfile.BLOCKSIZE)
    if len(block) < tarfile.BLOCKSIZE:
        raise tarfile.ReadError(f"truncated: ends at byte {end + len(block)}, mid-archive")
    if block != bytes(tarfile.BLOCKSIZE):
        raise tarfile.ReadError(f"damaged header at byte {end}")
