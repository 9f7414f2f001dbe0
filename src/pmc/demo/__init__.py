"""The demo corpus: dialogue scripts synthesised into conversations, with their ground truth.

Each script (``scripts/``, format in its README) is voiced by the bundled TTS and written in the
Seamless Interaction layout that :mod:`pmc.corpus` reads (``_build``), from a timeline of turns,
pauses, backchannels and barge-ins (``_script``, ``_timeline``), with a ground-truth file of
every event and the facts its recall points ask about. As a corpus source (``_source``) it is
built into a working directory and imported there with those facts. ``python -m pmc.demo.check``
checks a script while it is written.
"""

from pmc.demo._build import (
    GROUND_TRUTH_DIR,
    DemoConversation,
    GroundTruth,
    build_demo,
    read_ground_truth,
    recall_facts,
    script_paths,
)
from pmc.demo._source import (
    DEMO_MIN_DURATION_S,
    DEMO_SOURCE_DIR,
    DemoSource,
    build_demo_source,
    demo_scripts,
    import_demo_source,
)
from pmc.demo._timeline import GroundTruthEvent, GroundTruthKind

__all__ = [
    "DEMO_MIN_DURATION_S",
    "DEMO_SOURCE_DIR",
    "GROUND_TRUTH_DIR",
    "DemoConversation",
    "DemoSource",
    "GroundTruth",
    "GroundTruthEvent",
    "GroundTruthKind",
    "build_demo",
    "build_demo_source",
    "demo_scripts",
    "import_demo_source",
    "read_ground_truth",
    "recall_facts",
    "script_paths",
]
