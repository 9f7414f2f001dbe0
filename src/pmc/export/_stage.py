"""``pmc export``'s work: read a scored run once, write the peer's layout (docs/exports.md)."""

from __future__ import annotations

import shutil
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from pmc import audio, io
from pmc.corpus import Conversation, conversation_paths, read_conversation
from pmc.errors import PmcError
from pmc.export._fdb import (
    FDB_SAMPLE_RATE,
    FdbSample,
    FdbTask,
    at_fdb_rate,
    interrupt_json,
    interruption_window,
    mix_input,
    output_json,
    pause_json,
    task_for,
    turn_taking_json,
)
from pmc.export._source import Rollout, run_rollouts
from pmc.export._turnbench import (
    EXPORTED_KINDS,
    gold_file,
    gold_for,
    prediction,
    predictions_file,
)
from pmc.harness import live_for, read_rollout
from pmc.points import Point, points_dir
from pmc.progress import Start

INDEX_FILE = "index.json"
"""Which point and rollout each sample folder holds (beside the system folders, never inside a
task folder, whose every entry FDB's scripts read as a sample)."""
GOLD_FILE = "gold.json"
PREDICTIONS_DIR = "predictions"


@dataclass(frozen=True)
class Exported:
    """What an export wrote.

    Attributes:
        folder: Where.
        files: How many files it wrote.
        counts: Exported rollouts by system.
        skipped: One line per rollout left out, saying why.
    """

    folder: Path
    files: int
    counts: dict[str, int]
    skipped: tuple[str, ...]


def _fresh(out: Path) -> None:
    """An empty output folder: an export is remade whole, never merged with an older one."""
    if out.exists() and not out.is_dir():
        raise PmcError(f"{out}: exists and is not a folder")
    if out.is_dir() and any(out.iterdir()):
        if not (out / INDEX_FILE).is_file() and not (out / GOLD_FILE).is_file():
            raise PmcError(f"{out}: not empty and not an earlier export; choose another folder")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)


class _Contexts:
    """The person's live turn as text, read from the corpus once per conversation."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.loaded: dict[str, Conversation] = {}

    def text(self, point: Point) -> str:
        conversation = self.loaded.get(point.conversation_id)
        if conversation is None:
            paths = [p for p in conversation_paths(self.workdir) if p.stem == point.conversation_id]
            if not paths:
                return ""
            conversation = read_conversation(self.workdir, paths[0])
            self.loaded[point.conversation_id] = conversation
        words = conversation.speaker(point.user).words
        return " ".join(
            w.text
            for w in words
            if point.stream_start_conv_s <= w.start_conv_s < point.boundary_conv_s
        )


def export_fdb(run_dir: Path, out: Path, rollout: int = 0, start: Start | None = None) -> Exported:
    """Write ``run_dir``'s rollouts into ``out`` in Full-Duplex-Bench v1's layout.

    ``out/<system>/<task>/<n>/`` holds one sample (``n`` counts from 1 within the task, in point
    order); ``out/index.json`` says which point and rollout each holds. Kinds without an FDB
    task are left out, and so is a barge-in whose clip never played.
    """
    source = run_rollouts(run_dir, rollout)
    _fresh(out)
    contexts = _Contexts(source.run.workdir)
    cuts = points_dir(source.run.workdir)
    chosen = [r for r in source.rollouts if task_for(r.point.kind) is not None]
    skipped = list(source.skipped)
    advance = start(len(chosen)) if start is not None else None
    numbers: dict[tuple[str, FdbTask], int] = defaultdict(int)
    samples: list[FdbSample] = []
    counts: dict[str, int] = defaultdict(int)
    files = 0
    for r in chosen:
        task = task_for(r.point.kind)
        if task is not None:
            written = _fdb_sample(r, task, out, cuts, contexts, numbers)
            if written is None:
                skipped.append(f"{r.system} {r.point.point_id}: the clip never played")
            else:
                samples.append(written)
                counts[r.system] += 1
                files += 4
        if advance is not None:
            advance()
    io.write_json(
        out / INDEX_FILE, {"run_id": source.run.run_id, "samples": [s.to_dict() for s in samples]}
    )
    return Exported(out, files + 1, dict(counts), tuple(skipped))


def _fdb_sample(
    r: Rollout,
    task: FdbTask,
    out: Path,
    cuts: Path,
    contexts: _Contexts,
    numbers: dict[tuple[str, FdbTask], int],
) -> FdbSample | None:
    point, score = r.point, r.score
    words = [w for e in score.evidence for w in e.words]
    clip = None
    from_stream_s = 0.0
    if task is FdbTask.USER_INTERRUPTION:
        window = interruption_window(score)
        if window is None:
            return None
        annotation = interrupt_json(point, contexts.text(point), *window)
        clip = (audio.read(audio.probe(cuts / point.cuts["inject"])), window[0])
        from_stream_s = window[1]
    elif task is FdbTask.PAUSE_HANDLING:
        annotation = pause_json(point)
    else:
        annotation = turn_taking_json(point)
    numbers[(r.system, task)] += 1
    name = str(numbers[(r.system, task)])
    folder = out / r.system / task.value / name
    live = live_for(cuts, point)
    heard = mix_input(live, *clip) if clip is not None else live
    _, played = read_rollout(r.folder)
    io.write_bytes(folder / "input.wav", audio.wav_bytes(at_fdb_rate(heard), FDB_SAMPLE_RATE))
    io.write_bytes(folder / "output.wav", audio.wav_bytes(at_fdb_rate(played), FDB_SAMPLE_RATE))
    io.write_json(folder / "output.json", output_json(words, from_stream_s))
    io.write_json(folder / task.annotation_file, annotation)
    return FdbSample(r.system, task, name, point.point_id, r.score.rollout)


def export_turnbench(
    run_dir: Path, out: Path, rollout: int = 0, start: Start | None = None
) -> Exported:
    """Write each system's end-of-turn decisions as TurnBench predictions, and pmc's gold.

    ``out/predictions/<system>.json`` holds one entry per point the system was run at (empty
    lists where it said nothing); ``out/gold.json`` the points' own events in the shape
    of TurnBench's exported gold. Recall points are left out (no conversation time).
    """
    source = run_rollouts(run_dir, rollout)
    _fresh(out)
    chosen = [r for r in source.rollouts if r.point.kind in EXPORTED_KINDS]
    points = {r.point.point_id: r.point for r in chosen}
    systems = sorted({r.system for r in chosen})
    advance = start(len(systems) + 1) if start is not None else None
    by_system = {s: {r.point.point_id: r for r in chosen if r.system == s} for s in systems}
    entries: dict[str, list[dict[str, object]]] = {}
    latest = {pid: p.stream_end_conv_s for pid, p in points.items()}
    for system in systems:
        mine = by_system[system]
        entries[system] = []
        for pid in sorted(points):
            found = mine.get(pid)
            if found is None:  # not run there (a card's kinds), unlike a silent rollout
                continue
            entry = prediction(points[pid], found.score)
            entries[system].append(entry)
            for speaker in ("speaker_1", "speaker_2"):
                latest[pid] = max([latest[pid], *entry[speaker]["eot"]])
    for system in systems:
        io.write_json(out / PREDICTIONS_DIR / f"{system}.json", predictions_file(entries[system]))
        if advance is not None:
            advance()
    golds = [gold_for(points[pid], latest[pid]) for pid in sorted(points)]
    record = source.run.record
    io.write_json(out / GOLD_FILE, gold_file(golds, record.run_id, record.points_manifest_sha256))
    if advance is not None:
        advance()
    counts = {s: len(by_system[s]) for s in systems}
    return Exported(out, len(systems) + 1, counts, source.skipped)
