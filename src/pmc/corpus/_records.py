"""Turning a source's raw word and voice-activity records into checked :class:`Word` s.

Shared by every reader, so that one bad record gets the same message whatever the source.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pmc.corpus._types import Activity, Word, WordSource
from pmc.errors import InputError, Problem

AUDIO_TAIL_TOLERANCE_S = 0.5
"""How far words or activity may run past the end of the audio before the WAV counts as too short.

Seamless Interaction's timestamps are on a 100 Hz grid and its aligner can overshoot the last
sample slightly; half a second is well above that and well below a lost stretch of speech.
"""


TOO_DEEP = "invalid JSON (nested too deeply to read)"
"""Python's JSON reader recurses once per nested list or object and gives up near 1,000."""


@dataclass(frozen=True)
class Located:
    """A raw record and where it came from, for messages (``line 12``, ``metadata:vad[3]``)."""

    record: Any
    where: str


def decode_json_text(raw: bytes, path: str) -> Any:
    """Decode UTF-8 JSON bytes, naming the file and position of any problem."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not UTF-8 (byte {exc.start})", problem=Problem.NOT_UTF8) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            path, f"invalid JSON ({exc.msg})", f"line {exc.lineno}", Problem.BAD_JSON
        ) from None
    except RecursionError:
        raise InputError(path, TOO_DEEP, problem=Problem.BAD_JSON) from None


def read_jsonl(path: Path) -> list[Located]:
    """Read a JSON Lines file; every record remembers its line number."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(
            path, f"cannot read ({exc.strerror or exc})", problem=Problem.MISSING_FILE
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not UTF-8 (byte {exc.start})", problem=Problem.NOT_UTF8) from None
    out: list[Located] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append(Located(json.loads(line), f"line {number}"))
        except json.JSONDecodeError as exc:
            raise InputError(
                path, f"invalid JSON ({exc.msg})", f"line {number}", Problem.BAD_JSON
            ) from None
        except RecursionError:
            raise InputError(path, TOO_DEEP, f"line {number}", Problem.BAD_JSON) from None
    return out


def located_list(value: Any, path: str, key: str) -> list[Located]:
    """Records held in a JSON list under ``key``; each may itself be a JSON-encoded line."""
    if not isinstance(value, list):
        raise InputError(path, f"'{key}' is not a list")
    out = []
    for index, item in enumerate(value):
        where = f"{key}[{index}]"
        if isinstance(item, str):
            try:
                item = json.loads(item)
            except json.JSONDecodeError as exc:
                raise InputError(
                    path, f"invalid JSON ({exc.msg})", where, Problem.BAD_JSON
                ) from None
            except RecursionError:
                raise InputError(path, TOO_DEEP, where, Problem.BAD_JSON) from None
        out.append(Located(item, where))
    return out


def _time(record: dict[str, Any], key: str, path: str, where: str) -> float | None:
    value = record.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(path, f"'{key}' is not a number ({value!r})", where)
    if not math.isfinite(value):
        # Python's JSON reader accepts NaN and Infinity, and turns 1e999 into infinity.
        raise InputError(path, f"'{key}' is not a finite number ({value!r})", where)
    return float(value)


@dataclass
class WordStats:
    """Counts of words a reader dropped on purpose, reported in the import summary."""

    untimed: int = 0
    """Words without a start or end (the aligner could not place them, e.g. numerals)."""
    inverted: int = 0
    """Words with end <= start, dropped only in lenient mode."""


def parse_words(
    items: Sequence[Located],
    path: str,
    *,
    words_key: str | None,
    text_key: str = "word",
    lenient: bool = False,
    stats: WordStats | None = None,
) -> tuple[Word, ...]:
    """Words from transcript records.

    Args:
        items: Records; each holds a list of words under ``words_key``, or is one word itself
            when ``words_key`` is None.
        path: The file, for messages.
        words_key: Key of the word list inside each record (Seamless: ``words``).
        text_key: Key of a word's text.
        lenient: Drop words with end <= start instead of rejecting the file.
        stats: Collects counts of dropped words.
    """
    stats = stats if stats is not None else WordStats()
    words: list[Word] = []
    for item in items:
        if not isinstance(item.record, dict):
            raise InputError(path, "record is not a JSON object", item.where)
        if words_key is None:
            raw_words: Iterable[tuple[Any, str]] = [(item.record, item.where)]
        else:
            inner = item.record.get(words_key) or []
            if not isinstance(inner, list):
                raise InputError(path, f"'{words_key}' is not a list", item.where)
            raw_words = [(w, f"{item.where}: {words_key}[{i}]") for i, w in enumerate(inner)]
        for raw, where in raw_words:
            if not isinstance(raw, dict):
                raise InputError(path, "word is not a JSON object", where)
            value = raw.get(text_key, raw.get("text"))
            text = "" if value is None else str(value).strip()  # not the word "None"
            start = _time(raw, "start", path, where)
            end = _time(raw, "end", path, where)
            if start is None or end is None:
                stats.untimed += 1
                continue
            if end <= start:
                if lenient:
                    stats.inverted += 1
                    continue
                raise InputError(
                    path,
                    f"word {text!r} has end {end:.3f} s <= start {start:.3f} s",
                    where,
                    Problem.BAD_WORD_TIMES,
                )
            if start < 0:
                raise InputError(path, f"word {text!r} starts before 0 ({start:.3f} s)", where)
            score = raw.get("score")
            words.append(
                Word(
                    text=text,
                    start_conv_s=start,
                    end_conv_s=end,
                    source=WordSource.TRANSCRIPT,
                    score=float(score) if isinstance(score, int | float) else None,
                )
            )
    words.sort(key=lambda w: (w.start_conv_s, w.end_conv_s))
    return tuple(words)


def parse_activity(items: Sequence[Located], path: str) -> tuple[Activity, ...]:
    """Voice-activity stretches from ``{"start", "end"}`` records, sorted."""
    out: list[Activity] = []
    for item in items:
        if not isinstance(item.record, dict):
            raise InputError(path, "record is not a JSON object", item.where)
        start = _time(item.record, "start", path, item.where)
        end = _time(item.record, "end", path, item.where)
        if start is None or end is None:
            raise InputError(path, "voice-activity record without start or end", item.where)
        if end <= start:
            raise InputError(
                path, f"voice activity has end {end:.3f} s <= start {start:.3f} s", item.where
            )
        out.append(Activity(start, end))
    out.sort(key=lambda a: (a.start_conv_s, a.end_conv_s))
    return tuple(out)


def activity_from_words(words: Sequence[Word], bridge_s: float) -> tuple[Activity, ...]:
    """Voice activity derived from word spans, joining gaps up to ``bridge_s``.

    For sources that give words but no voice activity.
    """
    out: list[Activity] = []
    for w in words:
        if out and w.start_conv_s - out[-1].end_conv_s <= bridge_s:
            last = out[-1]
            out[-1] = Activity(last.start_conv_s, max(last.end_conv_s, w.end_conv_s))
        else:
            out.append(Activity(w.start_conv_s, w.end_conv_s))
    return tuple(out)


def check_fits_audio(
    words: Sequence[Word], activity: Sequence[Activity], audio_s: float, path: str
) -> None:
    """Reject a speaker whose words or activity run past the end of its audio."""
    ends = [w.end_conv_s for w in words] + [a.end_conv_s for a in activity]
    if ends and max(ends) > audio_s + AUDIO_TAIL_TOLERANCE_S:
        raise InputError(
            path,
            f"WAV shorter than its transcript (audio {audio_s:.2f} s, "
            f"words or activity run to {max(ends):.2f} s)",
            problem=Problem.AUDIO_SHORTER_THAN_TRANSCRIPT,
        )
