"""Tiny random-weight Moshi models for tests: a small Mimi, LM and SentencePiece model.

Built from moshi's own config dicts with the dimensions cut down (docs/dependencies.md
section 7), seeded, so every build gives the same weights. The frame rate and sample rate are
kept, so the models run the real streaming path at 80 ms frames. Nothing is downloaded: the
tokenizer is trained offline on sentences made here, and ``config.json`` names the Mimi config
with ``file://``, which moshi's loader reads without the hub.

Run in the duplex environment: ``python -m pmc.duplex_server.tiny OUT_DIR``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

from pmc.duplex_server._wire import INSTALL_HINT

SEED = 1234
"""The weights' seed; any fixed value does."""
VOCAB_SIZE = 128
"""Text vocabulary: the LM's ``text_card`` must equal it."""
CONFIG_FILE = "config.json"
MIMI_CONFIG_FILE = "mimi_config.json"
LM_WEIGHTS = "moshi.safetensors"
MIMI_WEIGHTS = "mimi.safetensors"
TOKENIZER = "tok.model"
FILES = (CONFIG_FILE, MIMI_CONFIG_FILE, LM_WEIGHTS, MIMI_WEIGHTS, TOKENIZER)

_WORDS = (
    "i you we they the a and but so yes no okay well really think know like just right "
    "going to have had been was were is are do did not that this what where when how why "
    "moving flat boxes friend coffee kitten garden bike match concert cooking dinner week "
    "today tomorrow morning night good great sorry thanks maybe sure fine nice oh ha hmm"
).split()


def mimi_config() -> dict[str, Any]:
    """Mimi's config with small dimensions (SEANet 32, one transformer layer, 8 x 64 codes).

    The ratios (8, 6, 5, 4) and the 12.5 Hz frame rate are moshi's own, so a frame stays 1920
    samples at 24 kHz.
    """
    from moshi.models import loaders

    dim = 32
    seanet = dict(loaders._seanet_kwargs) | {"dimension": dim, "n_filters": 4}
    quantizer = dict(loaders._quantizer_kwargs) | {
        "dimension": 16,
        "n_q": 8,
        "bins": 64,
        "input_dimension": dim,
        "output_dimension": dim,
    }
    transformer = dict(loaders._transformer_kwargs) | {
        "d_model": dim,
        "num_heads": 2,
        "num_layers": 1,
        "dim_feedforward": 64,
        "input_dimension": dim,
        "output_dimensions": [dim],
    }
    return dict(loaders._mimi_config) | {
        "seanet": seanet,
        "quantizer": quantizer,
        "transformer": transformer,
    }


def lm_config() -> dict[str, Any]:
    """The LM's config: dim 64, 2 layers, 4 generated and 4 user codebooks, a 1-layer depformer.

    The delays keep moshi's pattern (semantic codebook undelayed, acoustic ones one step late)
    for the agent's and the user's codebooks, so teacher forcing meets real delays.
    """
    from moshi.models import loaders

    return dict(loaders._lm_kwargs) | {
        "dim": 64,
        "text_card": VOCAB_SIZE,
        "n_q": 8,
        "dep_q": 4,
        "card": 64,
        "num_heads": 4,
        "num_layers": 2,
        "hidden_scale": 2,
        "depformer_dim": 32,
        "depformer_dim_feedforward": 64,
        "depformer_num_heads": 2,
        "depformer_num_layers": 1,
        "delays": [0, 0, 1, 1, 1, 0, 1, 1, 1],
    }


def _train_tokenizer(out: Path) -> None:
    """A BPE SentencePiece model with moshi's special ids (0 unk, 1 bos, 2 eos, 3 pad)."""
    import sentencepiece as spm

    rng = random.Random(SEED)
    sentences = [
        " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 12))) for _ in range(800)
    ]
    corpus = out / "tok_corpus.txt"
    corpus.write_text("\n".join(sentences) + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(out / Path(TOKENIZER).stem),
        vocab_size=VOCAB_SIZE,
        model_type="bpe",
        unk_id=0,
        bos_id=1,
        eos_id=2,
        pad_id=3,
        character_coverage=1.0,
        minloglevel=2,
    )
    corpus.unlink()


def _spread_codebooks(mimi: Any, torch: Any) -> None:
    """Give the untrained codebooks entries that real input falls between.

    An untrained codebook is all zeros, and a random encoder's latents barely move from frame
    to frame, so every frame would get one code and forcing the system's audio would prove
    nothing. Each codebook is drawn around the latents of seeded noise instead (mean plus
    twice their spread for the first layer, the spread alone for the residual layers), much as
    a k-means initialisation would place them.
    """
    generator = torch.Generator().manual_seed(SEED)
    samples = 60 * 1920  # 60 frames of amplitude-modulated noise
    noise = torch.randn(1, 1, samples, generator=generator) * 0.1
    noise = noise * (1 + torch.sin(torch.linspace(0, 60, samples)))
    with torch.no_grad():
        latent = mimi.encode_to_latent(noise, quantize=False)
        for rvq in (mimi.quantizer.rvq_first, mimi.quantizer.rvq_rest):
            z = rvq.input_proj(latent)[0]
            mean, spread = z.mean(dim=-1), z.std(dim=-1)
            for i, layer in enumerate(rvq.vq.layers):
                book = layer._codebook
                size = book.embedding_sum.shape[0]
                draw = torch.randn(size, len(mean), generator=generator)
                entries = mean + 2 * draw * spread if i == 0 else draw * spread
                book.embedding_sum.copy_(entries * book.cluster_usage[:, None])
                book._initialized.fill_(1)


def build(out: Path) -> Path:
    """Write the tiny models into ``out`` (created if needed); returns its ``config.json``."""
    try:
        import torch
        from moshi.models import loaders
        from safetensors.torch import save_file
    except ImportError as exc:
        raise SystemExit(f"{exc}. {INSTALL_HINT}") from None

    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(SEED)
    mimi_cfg = mimi_config()
    (out / MIMI_CONFIG_FILE).write_text(json.dumps(mimi_cfg, indent=1), encoding="utf-8")
    mimi = loaders.get_mimi(None, mimi_cfg, device="cpu")
    _spread_codebooks(mimi, torch)
    save_file({k: v.contiguous() for k, v in mimi.state_dict().items()}, str(out / MIMI_WEIGHTS))
    lm_cfg = lm_config()
    lm = loaders.get_moshi_lm(None, lm_cfg, device="cpu", dtype=torch.float32)
    save_file({k: v.contiguous() for k, v in lm.state_dict().items()}, str(out / LM_WEIGHTS))
    config = lm_cfg | {"mimi_config_name": f"file://{(out / MIMI_CONFIG_FILE).resolve()}"}
    (out / CONFIG_FILE).write_text(json.dumps(config, indent=1), encoding="utf-8")
    _train_tokenizer(out)
    return out / CONFIG_FILE


def main(argv: list[str] | None = None) -> None:
    """``python -m pmc.duplex_server.tiny OUT_DIR``."""
    parser = argparse.ArgumentParser(prog="python -m pmc.duplex_server.tiny", description=__doc__)
    parser.add_argument("out", type=Path, help="Folder to write the models into.")
    args = parser.parse_args(argv)
    print(build(args.out))


if __name__ == "__main__":
    main(sys.argv[1:])
