"""The demo as a corpus source: a slice of it is built into a working directory and imported."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pmc.corpus import RECALL_FACTS_FILE
from pmc.demo import DEMO_SOURCE_DIR, build_demo_source, import_demo_source

pytestmark = pytest.mark.slow


def test_a_slice_imports_only_its_conversations_and_their_facts(
    demo_workdir: Path, tmp_path: Path
) -> None:
    """The folder holds all ten (a cache); the slice asked for two imports those two only."""
    workdir = tmp_path / "w"
    shutil.copytree(demo_workdir / DEMO_SOURCE_DIR, workdir / DEMO_SOURCE_DIR)
    keys = build_demo_source(workdir, conversations=2)
    summary = import_demo_source(workdir, keys)
    assert sorted(summary.imported) == ["V99_S0001_I00000001", "V99_S0001_I00000002"]
    assert not summary.skipped and not summary.filtered
    facts = json.loads((workdir / "corpus" / RECALL_FACTS_FILE).read_text())
    assert sorted(facts) == sorted(summary.imported)
