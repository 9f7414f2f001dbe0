"""The demo's whole pipeline in one call (what ``pmc demo`` runs).

Each stage runs as its own command runs it, in one working directory, so a second call keeps
what the first finished: the synthesised demo (a cache), labels made with the same settings,
finished rollouts and scores made with the same settings.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from pmc.asr import DEFAULT_ASR
from pmc.corpus import ImportSummary, Skipped, SourceKind
from pmc.curves import SWEPT_ADAPTER, sweep
from pmc.demo import DEMO_MIN_DURATION_S, build_demo_source, demo_scripts, import_demo_source
from pmc.harness import RunSettings, run_rollouts, runs_dir
from pmc.labels import run_labels, run_selection, write_inventory
from pmc.points import run_points
from pmc.progress import Start
from pmc.report import RESAMPLES, build_report
from pmc.scoring import ScoreSettings, run_scoring
from pmc.systems import SystemCard

DEMO_RUN = "demo"
"""The demo's run id (``demo-N`` for a slice of N conversations)."""
DEMO_ASR = "faster-whisper:tiny.en"
"""The demo scores with the fast bundled model (Whisper base, the default, takes twice as long)."""
DEMO_CUTOFF = 0.0
"""The ten demo conversations were all written to be lively; the paper's 0.75 cutoff ranks
Seamless's 1,395 and would keep one or two of ten, so the demo keeps them all."""


class Stage(StrEnum):
    """The pipeline's stages, in the order they run."""

    CORPUS = "corpus"
    LABELS = "labels"
    SELECTION = "selection"
    POINTS = "points"
    ROLLOUTS = "rollouts"
    SCORES = "scores"
    CURVE = "curve"
    REPORT = "report"


Progress = Callable[[str], AbstractContextManager[Start]]
"""Given a step's title, a context that yields its progress hook (a bar, in the command line)."""


@contextmanager
def _no_progress(_title: str) -> Iterator[Start]:
    yield lambda _total: lambda: None


@dataclass(frozen=True)
class PipelineHooks:
    """What the caller hears of a pipeline as it runs (all optional).

    Attributes:
        progress: A progress hook per step.
        on_skip: Told of each conversation the import skipped, with its reason.
        done: Told of each stage as it ends, with its result: the import summary, the label
            run and the inventory, the selection, the points and the funnel, the rollouts'
            tallies, the scores' tallies, the report's ``index.html``.
    """

    progress: Progress = _no_progress
    on_skip: Callable[[Skipped], None] | None = None
    done: Callable[[Stage, Any], None] | None = None


def demo_run_id(conversations: int | None) -> str:
    """The run a demo of the first ``conversations`` (all when None) writes."""
    return DEMO_RUN if conversations is None else f"{DEMO_RUN}-{conversations}"


def import_demo(
    workdir: Path,
    conversations: int | None = None,
    min_duration_s: float = DEMO_MIN_DURATION_S,
    hooks: PipelineHooks | None = None,
) -> ImportSummary:
    """The demo's corpus in ``workdir``: its first ``conversations`` synthesised and imported.

    The synthesis is a cache: conversations already synthesised with the same voice and script
    are kept. Conversations shorter than ``min_duration_s`` are skipped (``hooks.on_skip``).
    """
    hooks = hooks or PipelineHooks()
    with hooks.progress("synthesising demo") as start:
        advance = start(len(demo_scripts(conversations)))
        keys = build_demo_source(workdir, conversations, on_built=lambda _name: advance())
    with hooks.progress(f"importing {SourceKind.SEAMLESS.value}") as start:
        return import_demo_source(workdir, keys, min_duration_s, hooks.on_skip, start)


def run_demo_pipeline(
    workdir: Path,
    cards: list[SystemCard],
    conversations: int | None = None,
    hooks: PipelineHooks | None = None,
) -> Path:
    """Every stage on the bundled demo corpus (its first ``conversations``), offline.

    Synthesises and imports the demo into ``workdir``, labels and selects it, builds its
    points, runs ``cards`` at every point in the run :func:`demo_run_id`, scores that run with
    :data:`DEMO_ASR` and writes its report; returns the report's ``index.html``.
    """
    hooks = hooks or PipelineHooks()

    def done(stage: Stage, result: Any) -> None:
        if hooks.done is not None:
            hooks.done(stage, result)

    done(Stage.CORPUS, import_demo(workdir, conversations, hooks=hooks))
    with hooks.progress("labelling") as start:
        labelled = run_labels(workdir, asr=DEFAULT_ASR, progress=start)
    done(Stage.LABELS, (labelled, write_inventory(workdir)))
    done(Stage.SELECTION, run_selection(workdir, DEMO_CUTOFF))
    with hooks.progress("building points") as start:
        done(Stage.POINTS, run_points(workdir, progress=start))
    run_id = demo_run_id(conversations)
    with hooks.progress(f"rollouts of {len(cards)} system(s)") as start:
        done(Stage.ROLLOUTS, run_rollouts(workdir, cards, RunSettings(run_id), start))
    run_dir = runs_dir(workdir) / run_id
    with hooks.progress("scoring rollouts") as start:
        done(
            Stage.SCORES,
            run_scoring(run_dir, ScoreSettings(asr=DEMO_ASR), workers=None, start=start),
        )
    swept = [c for c in cards if c.adapter == SWEPT_ADAPTER][:1]
    if swept:  # the report draws the endpointer's trade-off curve with the run's cards on it
        with hooks.progress(f"sweeping {swept[0].name}'s silence window") as start:
            done(Stage.CURVE, sweep(workdir, swept[0], start=start))
    with hooks.progress("writing the report") as start:
        advance = start(1)
        index = build_report(run_dir, seed=0, resamples=RESAMPLES)
        advance()
    done(Stage.REPORT, index)
    return index
