"""The demo as a corpus source: synthesised into the working directory, then imported.

The build (:func:`build_demo_source`) writes ``WORKDIR/demo-source/`` in Seamless Interaction's
layout (a cache: a conversation built before is not synthesised again); the import
(:func:`import_demo_source`) reads it with the real Seamless reader, keeping only the
conversations just built, and writes the scripts' own facts beside the corpus, where the points
stage reads a corpus's recall facts.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pmc import io
from pmc.corpus import (
    RECALL_FACTS_FILE,
    ImportSummary,
    Scan,
    SeamlessSource,
    Skipped,
    corpus_dir,
    import_corpus,
)
from pmc.demo._build import build_demo, recall_facts, script_paths
from pmc.progress import Start

DEMO_SOURCE_DIR = "demo-source"
"""Where the demo is synthesised, inside the working directory."""
DEMO_MIN_DURATION_S = 60.0
"""The demo's conversations last 2 to 4 minutes, below Seamless's 7-minute rule."""


class DemoSource(SeamlessSource):
    """The Seamless reader on the demo's folder, keeping only the conversations asked for.

    The folder may hold more of them from an earlier, larger build (it is a cache).
    """

    def __init__(self, root: Path, keys: set[str]) -> None:
        super().__init__(root)
        self.keys = keys

    def scan(self) -> Scan:
        """The Seamless scan, less the conversations not asked for."""
        scan = super().scan()
        scan.candidates = [c for c in scan.candidates if c.item in self.keys]
        return scan


def demo_scripts(conversations: int | None = None) -> list[Path]:
    """The bundled scripts, or the first ``conversations`` of them."""
    return script_paths()[:conversations]


def build_demo_source(
    workdir: Path,
    conversations: int | None = None,
    on_built: Callable[[str], None] | None = None,
    workers: int | None = None,
) -> set[str]:
    """Synthesise the demo (or its first ``conversations``) under ``workdir``; their keys.

    ``on_built`` is told each conversation's name as it is built or found in the cache;
    ``workers`` processes synthesise at once (None: one per core).
    """
    scripts = demo_scripts(conversations)
    built = build_demo(
        workdir / DEMO_SOURCE_DIR, on_progress=on_built, scripts=scripts, workers=workers
    )
    return {c.interaction for c in built}


def import_demo_source(
    workdir: Path,
    keys: set[str],
    min_duration_s: float = DEMO_MIN_DURATION_S,
    on_skip: Callable[[Skipped], None] | None = None,
    progress: Start | None = None,
) -> ImportSummary:
    """Import the built conversations ``keys`` and write their recall facts beside the corpus."""
    source_dir = workdir / DEMO_SOURCE_DIR
    summary = import_corpus(
        DemoSource(source_dir, keys),
        workdir,
        min_duration_s=min_duration_s,
        on_skip=on_skip,
        progress=progress,
    )
    # The scripts' own facts stand in for LLM fact extraction (points stage, recall points).
    facts = {k: v for k, v in recall_facts(source_dir).items() if k in keys}
    io.write_json(corpus_dir(workdir) / RECALL_FACTS_FILE, facts)
    return summary
