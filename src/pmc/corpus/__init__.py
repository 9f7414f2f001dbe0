"""Corpus stage: read a source (Seamless Interaction, a folder, the demo) into conversations.

Fetching Seamless Interaction from the Hub is :mod:`pmc.hub`; synthesising the demo corpus, in
the Seamless layout this stage reads, is :mod:`pmc.demo`.
"""

from pmc.corpus._folder import FolderSource
from pmc.corpus._import import MIN_DURATION_S, ImportSummary, import_corpus
from pmc.corpus._info import CorpusStats, corpus_stats
from pmc.corpus._records import WordStats, activity_from_words
from pmc.corpus._seamless import ANY_SEAMLESS_LABEL, SEAMLESS_LABELS, SeamlessSource
from pmc.corpus._seamless import FILE_ID as SEAMLESS_FILE_ID
from pmc.corpus._seamless import SPLITS as SEAMLESS_FOLDER_SPLITS
from pmc.corpus._seamless import TRANSCRIPT_KEY as SEAMLESS_TRANSCRIPT_KEY
from pmc.corpus._seamless import VAD_KEY as SEAMLESS_VAD_KEY
from pmc.corpus._source import CorpusSource, Filtered, FilterReason, Scan, Skipped
from pmc.corpus._store import (
    RECALL_FACTS_FILE,
    conversation_paths,
    corpus_dir,
    read_conversation,
    read_corpus,
)
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
    "MIN_DURATION_S",
    "RECALL_FACTS_FILE",
    "SEAMLESS_FILE_ID",
    "SEAMLESS_FOLDER_SPLITS",
    "SEAMLESS_LABELS",
    "SEAMLESS_TRANSCRIPT_KEY",
    "SEAMLESS_VAD_KEY",
    "Activity",
    "Channel",
    "Conversation",
    "CorpusSource",
    "CorpusStats",
    "FilterReason",
    "Filtered",
    "FolderSource",
    "ImportSummary",
    "Scan",
    "SeamlessSource",
    "Skipped",
    "SourceKind",
    "Speaker",
    "Word",
    "WordSource",
    "WordStats",
    "activity_from_words",
    "conversation_paths",
    "corpus_dir",
    "corpus_stats",
    "import_corpus",
    "read_conversation",
    "read_corpus",
]
