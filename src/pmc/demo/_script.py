"""The dialogue-script format of the bundled demo corpus (``scripts/README.md``)."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from pmc.corpus import Channel
from pmc.errors import InputError

DEFAULT_GAP_S = 0.3
GAP_RANGE_S = (-0.5, 2.0)
PAUSE_RANGE_S = (0.3, 3.0)
TAKE_MIN_PAUSE_S = 1.5
TAKE_WORDS = (3, 5)
BACKCHANNEL_MAX_WORDS = 2
"""A backchannel is at most two words (the label engine's rule, paper section 3.2)."""
TURN_MIN_WORDS = BACKCHANNEL_MAX_WORDS + 1
"""A turn of two words or fewer is, by that same rule, a backchannel; scripts say what they mean."""
BARGE_RANGE_S = (0.2, 1.5)
"""How long a replier talks on after a barge-in before it stops (ours: from about a syllable,
where most overlaps resolve, to a stubborn second and a half)."""
SHORT_TURN_WORDS = 5
"""A turn this short that the next speaker overlaps at its end looks exactly like a failed take
(a short start that yields when talked over): the label engine's take is at most five words."""

_HEADER_KEYS = ("title", "fact_speaker", "fact", "question", "answer")
_TURN = re.compile(r"^(?P<speaker>[AB])\s*(?P<gap>[+-]\d+(?:\.\d+)?)?\s*:\s*(?P<body>.+)$")
_MARKER = re.compile(r"<([^<>]*)>")
_PAUSE = re.compile(r"^pause\s+(?P<s>\d+(?:\.\d+)?)(?P<mid>\s+mid)?(?:\s+take:\s*(?P<take>.+))?$")
_BACKCHANNEL = re.compile(r"^bc\s+(?P<words>.+)$")
_BARGE = re.compile(r"^barge\s+(?P<s>\d+(?:\.\d+)?)$")
_ALLOWED = re.compile(r"^[A-Za-z0-9 .,?!'\-]*$")


class PauseKind(StrEnum):
    """Where a scripted pause falls in its clause."""

    COMPLETE = "complete"
    """After a complete clause: the words alone suggest the turn could end."""
    MID = "mid"
    """Mid-clause: the words alone say the turn goes on."""


@dataclass(frozen=True)
class Phrase:
    """Words spoken without a scripted pause, with backchannels placed after some of them."""

    words: tuple[str, ...]
    backchannels: tuple[tuple[int, tuple[str, ...]], ...] = ()
    """(index of the word the listener responds after, the listener's words)."""
    barge_in: tuple[int, float] | None = None
    """(index of the word after which the listener starts the next turn over this one, how long
    this speaker goes on before it stops); the words after that index are cut off there."""


@dataclass(frozen=True)
class Pause:
    """A scripted pause inside a turn, optionally with the listener's failed take inside it."""

    duration_s: float
    kind: PauseKind
    take: tuple[str, ...] = ()


@dataclass(frozen=True)
class ScriptTurn:
    """One turn: who speaks, how long after the previous turn, and what (phrases and pauses)."""

    speaker: Channel
    gap_s: float
    pieces: tuple[Phrase | Pause, ...]
    line: int
    gap_given: bool = False
    """Whether the script wrote the gap (a turn after a barge-in must not: its start is fixed)."""

    @property
    def barge_in(self) -> tuple[int, float] | None:
        """The barge-in this turn is cut by, if any (always in its last phrase)."""
        last = self.pieces[-1]
        return last.barge_in if isinstance(last, Phrase) else None


@dataclass(frozen=True)
class Script:
    """A parsed dialogue script."""

    name: str
    title: str
    fact_speaker: Channel
    fact: str
    question: str
    answer: str
    turns: tuple[ScriptTurn, ...]


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


def parse_script(path: Path) -> Script:
    """Parse and check one script; any problem is an :class:`InputError` naming the line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not UTF-8 (byte {exc.start})") from None
    header: dict[str, str] = {}
    turns: list[ScriptTurn] = []
    in_body = False
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        where = f"line {number}"
        if not line or line.startswith("#"):
            continue
        if not in_body:
            if line == "---":
                in_body = True
                continue
            key, sep, value = line.partition(":")
            if not sep or key.strip() not in _HEADER_KEYS:
                raise InputError(path, f"unknown header line {line!r}", where)
            header[key.strip()] = value.strip()
            continue
        turns.append(_parse_turn(path, number, line, turns[-1].speaker if turns else None))
    missing = [k for k in _HEADER_KEYS if k not in header]
    if missing:
        raise InputError(path, f"header lacks {', '.join(missing)}")
    if header["fact_speaker"] not in ("A", "B"):
        raise InputError(path, "fact_speaker must be A or B")
    if not turns:
        raise InputError(path, "no turns after '---'")
    if turns[0].barge_in is not None:
        raise InputError(
            path, "a barge-in comes over a reply: not in the first turn", f"line {turns[0].line}"
        )
    if turns[-1].barge_in is not None:
        raise InputError(
            path, "a barge-in needs the listener's turn after it", f"line {turns[-1].line}"
        )
    for before, after in itertools.pairwise(turns):
        if before.barge_in is not None and after.gap_given:
            raise InputError(
                path,
                "a turn after a barge-in starts where the barge-in is: give it no gap",
                f"line {after.line}",
            )
        spoken = sum(len(p.words) for p in before.pieces if isinstance(p, Phrase))
        if after.gap_s < 0 and spoken <= SHORT_TURN_WORDS:
            raise InputError(
                path,
                f"a turn of {spoken} words overlapped at its end reads as a failed take; "
                "give this turn a gap of 0 or more",
                f"line {after.line}",
            )
    return Script(
        name=path.stem,
        title=header["title"],
        fact_speaker=Channel(header["fact_speaker"]),
        fact=header["fact"],
        question=header["question"],
        answer=header["answer"],
        turns=tuple(turns),
    )


def _parse_turn(path: Path, number: int, line: str, previous: Channel | None) -> ScriptTurn:
    where = f"line {number}"
    match = _TURN.match(line)
    if not match:
        raise InputError(path, "a turn line starts with 'A:' or 'B:' (optionally 'A +0.4:')", where)
    speaker = Channel(match.group("speaker"))
    if speaker is previous:
        raise InputError(path, f"speaker {speaker.value} speaks twice in a row", where)
    gap = float(match.group("gap")) if match.group("gap") else DEFAULT_GAP_S
    if not GAP_RANGE_S[0] <= gap <= GAP_RANGE_S[1]:
        raise InputError(path, f"gap {gap} s outside {GAP_RANGE_S}", where)
    pieces: list[Phrase | Pause] = []
    words: list[str] = []
    backchannels: list[tuple[int, tuple[str, ...]]] = []
    barge: tuple[int, float] | None = None

    def close_phrase() -> None:
        if words:
            pieces.append(Phrase(tuple(words), tuple(backchannels), barge))
        elif backchannels:
            raise InputError(path, "a backchannel needs words on both sides", where)
        words.clear()
        backchannels.clear()

    body = match.group("body")
    position = 0
    for marker in _MARKER.finditer(body):
        words.extend(_check_text(path, where, body[position : marker.start()]))
        position = marker.end()
        content = marker.group(1).strip()
        pause = _PAUSE.match(content)
        backchannel = _BACKCHANNEL.match(content)
        barge_in = _BARGE.match(content)
        if barge is not None:
            raise InputError(path, "nothing but words may follow a barge-in marker", where)
        if barge_in:
            delay = float(barge_in.group("s"))
            if not BARGE_RANGE_S[0] <= delay <= BARGE_RANGE_S[1]:
                raise InputError(path, f"barge-in {delay} s outside {BARGE_RANGE_S}", where)
            before = sum(len(p.words) for p in pieces if isinstance(p, Phrase)) + len(words)
            if before < TURN_MIN_WORDS or not words:
                raise InputError(
                    path, f"a barge-in needs {TURN_MIN_WORDS} words of the turn before it", where
                )
            if backchannels and backchannels[-1][0] == len(words) - 1:
                raise InputError(path, "a barge-in must follow words, not a backchannel", where)
            barge = (len(words) - 1, delay)
        elif pause:
            duration = float(pause.group("s"))
            if not PAUSE_RANGE_S[0] <= duration <= PAUSE_RANGE_S[1]:
                raise InputError(path, f"pause {duration} s outside {PAUSE_RANGE_S}", where)
            take = _check_text(path, where, pause.group("take") or "")
            if take and not TAKE_WORDS[0] <= len(take) <= TAKE_WORDS[1]:
                raise InputError(path, f"a failed take has {TAKE_WORDS} words", where)
            if take and duration < TAKE_MIN_PAUSE_S:
                raise InputError(path, f"a take needs a pause of {TAKE_MIN_PAUSE_S} s", where)
            if not words or (backchannels and backchannels[-1][0] == len(words) - 1):
                raise InputError(path, "a pause must follow words, not a backchannel", where)
            close_phrase()
            kind = PauseKind.MID if pause.group("mid") else PauseKind.COMPLETE
            pieces.append(Pause(duration, kind, take))
        elif backchannel:
            said = _check_text(path, where, backchannel.group("words"))
            if not 1 <= len(said) <= BACKCHANNEL_MAX_WORDS:
                raise InputError(
                    path, f"a backchannel has 1 to {BACKCHANNEL_MAX_WORDS} words", where
                )
            if not words:
                raise InputError(path, "a backchannel must follow words", where)
            backchannels.append((len(words) - 1, said))
        else:
            raise InputError(path, f"unknown marker <{content}>", where)
    words.extend(_check_text(path, where, body[position:]))
    if barge is not None and barge[0] == len(words) - 1:
        raise InputError(path, "a barge-in needs the words it cuts off after it", where)
    if backchannels and backchannels[-1][0] == len(words) - 1:
        raise InputError(path, "a backchannel needs words on both sides", where)
    if not words:
        raise InputError(path, "a turn must end with words, not a pause", where)
    close_phrase()
    spoken = sum(len(p.words) for p in pieces if isinstance(p, Phrase))
    if spoken < TURN_MIN_WORDS:
        raise InputError(path, f"a turn has at least {TURN_MIN_WORDS} words", where)
    return ScriptTurn(speaker, gap, tuple(pieces), number, match.group("gap") is not None)


def _check_text(path: Path, where: str, text: str) -> tuple[str, ...]:
    if not _ALLOWED.match(text):
        bad = sorted({c for c in text if not _ALLOWED.match(c)})
        raise InputError(path, f"characters not allowed in a script: {''.join(bad)!r}", where)
    if any(c.isdigit() for c in text):
        raise InputError(path, "write numbers as words", where)
    return _words(text)
