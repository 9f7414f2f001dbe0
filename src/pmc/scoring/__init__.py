"""Scoring stage: the paper's metrics for every rollout, recomputable from its own files.

The speech gate on the played track, words from Whisper with word times on the stream clock,
word-bearing intervals and wordless phonation (``_evidence``); pause, turn-end and recall
metrics (``_metrics``, ``_text``, ``_embed``, ``_recall_judge``); talk over the person and yields
(``_talkover``); and the resumable stage
(``_stage``), with the judges' verdicts added outside the transcription workers
(``_verdicts``). The gate's calibration against windowed recognition is :mod:`pmc.calibration`.
"""

from pmc.scoring._embed import Embedder, embedder
from pmc.scoring._embed import model_path as embedding_model_path
from pmc.scoring._evidence import Evidence, TalkStretch, evidence, talk_stretches
from pmc.scoring._memo import RememberingTranscriber, clip_digest
from pmc.scoring._metrics import PauseOutcome, PauseScore, ReplyScore, pause_score, reply_score
from pmc.scoring._pool import WORDS_ENV, close_scoring_pool
from pmc.scoring._recall_judge import RecallItem, RecallJudgeError, RecallVerdict, judge_recall
from pmc.scoring._rollout import score_rollout
from pmc.scoring._stage import (
    PROVENANCE_SUFFIX,
    ScoreTally,
    ScoringCluster,
    read_provenance,
    read_scores,
    run_scoring,
    scoring_models,
)
from pmc.scoring._talkover import (
    YIELD_QUIET_S,
    YIELD_WINDOW_S,
    ClipScore,
    TalkOver,
    YieldScore,
    talk_over,
    yield_to,
)
from pmc.scoring._text import StrictVerdict, content_words, strict_recall, token_f1, tokens
from pmc.scoring._transcribe import (
    CLIP_JOIN_S,
    CLIP_MARGIN_S,
    Transcription,
    clips,
    transcribe_track,
)
from pmc.scoring._types import (
    DEFAULT_SCORING_ASR,
    METRICS_VERSION,
    SCORE_SCHEMA_VERSION,
    RecallScore,
    Score,
    ScoreSettings,
    ScoreStatus,
)
from pmc.scoring._verdicts import make_judge
from pmc.scoring._worker import WORKER_ENV

__all__ = [
    "CLIP_JOIN_S",
    "CLIP_MARGIN_S",
    "DEFAULT_SCORING_ASR",
    "METRICS_VERSION",
    "PROVENANCE_SUFFIX",
    "SCORE_SCHEMA_VERSION",
    "WORDS_ENV",
    "WORKER_ENV",
    "YIELD_QUIET_S",
    "YIELD_WINDOW_S",
    "ClipScore",
    "Embedder",
    "Evidence",
    "PauseOutcome",
    "PauseScore",
    "RecallItem",
    "RecallJudgeError",
    "RecallScore",
    "RecallVerdict",
    "RememberingTranscriber",
    "ReplyScore",
    "Score",
    "ScoreSettings",
    "ScoreStatus",
    "ScoreTally",
    "ScoringCluster",
    "StrictVerdict",
    "TalkOver",
    "TalkStretch",
    "Transcription",
    "YieldScore",
    "clip_digest",
    "clips",
    "close_scoring_pool",
    "content_words",
    "embedder",
    "embedding_model_path",
    "evidence",
    "judge_recall",
    "make_judge",
    "pause_score",
    "read_provenance",
    "read_scores",
    "reply_score",
    "run_scoring",
    "score_rollout",
    "scoring_models",
    "strict_recall",
    "talk_over",
    "talk_stretches",
    "token_f1",
    "tokens",
    "transcribe_track",
    "yield_to",
]
