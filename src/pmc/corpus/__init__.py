"""Corpus stage: read a source (Seamless Interaction, a folder, the demo) into conversations."""

from pmc.corpus._demo import (
    GROUND_TRUTH_DIR,
    DemoConversation,
    GroundTruth,
    build_demo,
    read_ground_truth,
    recall_facts,
    script_paths,
)
from pmc.corpus._demo_timeline import GroundTruthEvent, GroundTruthKind
from pmc.corpus._fetch import HUB_REPO_ID, SEAMLESS_SPLITS, FetchSummary, fetch_seamless
from pmc.corpus._folder import FolderSource
from pmc.corpus._hub import ByteAdvance, ByteStart, DownloadOutcome
from pmc.corpus._import import MIN_DURATION_S, ImportSummary, import_corpus
from pmc.corpus._info import CorpusStats, corpus_stats
from pmc.corpus._records import WordStats
from pmc.corpus._seamless import ANY_SEAMLESS_LABEL, SEAMLESS_LABELS, SeamlessSource
from pmc.corpus._source import CorpusSource, Filtered, FilterReason, Scan, Skipped
from pmc.corpus._store import conversation_paths, corpus_dir, read_conversation, read_corpus
from pmc.corpus._types import (
    CONVERSATION_SCHEMA_VERSION,
    Activity,
    Channel,
    Conversation,
    SourceKind,
    Speaker,
    Word,
    WordSource,
)

__all__ = [
    "ANY_SEAMLESS_LABEL",
    "CONVERSATION_SCHEMA_VERSION",
    "GROUND_TRUTH_DIR",
    "HUB_REPO_ID",
    "MIN_DURATION_S",
    "SEAMLESS_LABELS",
    "SEAMLESS_SPLITS",
    "Activity",
    "ByteAdvance",
    "ByteStart",
    "Channel",
    "Conversation",
    "CorpusSource",
    "CorpusStats",
    "DemoConversation",
    "DownloadOutcome",
    "FetchSummary",
    "FilterReason",
    "Filtered",
    "FolderSource",
    "GroundTruth",
    "GroundTruthEvent",
    "GroundTruthKind",
    "ImportSummary",
    "Scan",
    "SeamlessSource",
    "Skipped",
    "SourceKind",
    "Speaker",
    "Word",
    "WordSource",
    "WordStats",
    "build_demo",
    "conversation_paths",
    "corpus_dir",
    "corpus_stats",
    "fetch_seamless",
    "import_corpus",
    "read_conversation",
    "read_corpus",
    "read_ground_truth",
    "recall_facts",
    "script_paths",
]
