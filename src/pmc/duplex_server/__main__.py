"""``python -m pmc.duplex_server`` (and ``pmc serve-duplex``): serve, check forcing, time steps.

Options are defined here once, with argparse, so the duplex environment needs none of pmc's
command-line dependencies; ``pmc serve-duplex`` hands its arguments to :func:`main`.

- ``serve``: load the model(s) and serve ``/api/chat``, ``/api/duplex`` and ``/api/stats``.
- ``check-forcing``: force a random history through a fresh instance and print, as JSON, the
  tokens forced and the tokens the model then emitted for each frame (the tests compare them).
- ``step-times``: time live steps on silence and print them as JSON.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from pmc.duplex_server._wire import DEFAULT_SEED, FRAME_SAMPLES, INSTALL_HINT

DEFAULT_PORT = 8999
"""One above the stock server's 8998, so both can run on one host."""


def _model_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--hf-repo",
        default="kyutai/moshiko-pytorch-bf16",
        help="Hub repository for files not given locally (needs the internet or the hub cache).",
    )
    parser.add_argument("--config", type=Path, help="The LM's config.json (moshi format).")
    parser.add_argument("--moshi-weight", type=Path, help="The LM's safetensors.")
    parser.add_argument("--mimi-weight", type=Path, help="Mimi's safetensors.")
    parser.add_argument("--tokenizer", type=Path, help="The SentencePiece model.")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument(
        "--dtype",
        choices=("bfloat16", "float32"),
        help="Model precision (default: bfloat16 on cuda, float32 on cpu).",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="PyTorch CPU threads (1: two threads on busy cores spike to hundreds of ms/step).",
    )
    parser.add_argument(
        "--max-history-frames",
        type=int,
        help="History cap in 80 ms frames (default: the LM's context; 3000 for Moshi).",
    )


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m pmc.duplex_server`` / ``pmc serve-duplex``."""
    parser = argparse.ArgumentParser(
        prog="pmc serve-duplex",
        description="Serve moshi-family full-duplex models with a teacher-forced preload route.",
    )
    sub = parser.add_subparsers(dest="command")
    serve = sub.add_parser("serve", help="Serve the model (the default command).")
    _model_args(serve)
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT)
    serve.add_argument("--instances", type=int, default=1, help="Model copies (one session each).")
    serve.add_argument("--seed", type=int, default=DEFAULT_SEED, help="Seed of unseeded sessions.")
    check = sub.add_parser("check-forcing", help="Force a random history; print JSON.")
    _model_args(check)
    check.add_argument("--frames", type=int, default=40, help="History frames to force.")
    check.add_argument("--seed", type=int, default=0)
    check.add_argument(
        "--words",
        type=json.loads,
        help='The system\'s words as JSON, [["word", start_s, end_s], ...] (default: random).',
    )
    times = sub.add_parser("step-times", help="Time live steps on silence; print JSON.")
    _model_args(times)
    times.add_argument("--steps", type=int, default=200)
    return parser


def main(argv: list[str] | None = None) -> None:
    """Parse ``argv`` and run the command (``serve`` when none is named)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or (args_list[0].startswith("-") and args_list[0] not in ("-h", "--help")):
        args_list.insert(0, "serve")
    args = build_parser().parse_args(args_list)
    if args.command is None:
        build_parser().print_help()
        return
    os.environ.setdefault("NO_TORCH_COMPILE", "1")  # moshi compiles lazily otherwise: 3-14 s
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    try:
        import torch

        from pmc.duplex_server import _engine, _server
    except ImportError as exc:
        raise SystemExit(f"{exc}. {INSTALL_HINT}") from None
    torch.set_num_threads(args.threads)
    weights = _engine.Weights(
        args.hf_repo, args.config, args.moshi_weight, args.mimi_weight, args.tokenizer
    )
    dtype = args.dtype or ("bfloat16" if args.device == "cuda" else "float32")
    if args.command == "serve":
        config = _server.ServeConfig(
            args.host,
            args.port,
            weights,
            args.device,
            dtype,
            args.instances,
            args.max_history_frames,
            seed=args.seed,
        )
        _server.serve(config)
        return
    engine = _engine.Engine(
        weights, args.device, dtype, _engine.Sampling(), args.max_history_frames
    )
    if args.command == "step-times":
        print(json.dumps({"step_ms": engine.silence_step_ms(args.steps)}))
        return
    print(json.dumps(check_forcing(engine, args.frames, args.seed, args.words)))


def check_forcing(
    engine: object, frames: int, seed: int, words: list[list[object]] | None = None
) -> dict[str, object]:
    """Force ``frames`` frames of random history; the forced and the emitted tokens per frame.

    Both tracks are seeded noise; the system's words are ``words``, or random vocabulary at
    random times.
    ``emitted[f]`` is what the model's output stream carried for frame ``f`` (None where the
    step emitted nothing yet), ``forced[f]`` what was forced: text then each codebook.
    """
    import numpy as np

    from pmc.duplex_server._engine import Engine

    if not isinstance(engine, Engine):
        raise TypeError("an Engine")
    rng = np.random.default_rng(seed)
    samples = frames * FRAME_SAMPLES
    user = (rng.standard_normal(samples) * 0.1).astype(np.float32)
    system = (rng.standard_normal(samples) * 0.1).astype(np.float32)
    vocab = ["okay", "really", "moving", "coffee", "kitten", "tomorrow", "great", "boxes"]
    timed: list[tuple[str, float, float]] = []
    if words is not None:
        timed = [(str(w), float(s), float(e)) for w, s, e in words]  # type: ignore[arg-type]
    at = 0.2
    while words is None and at < frames / 12.5 - 0.5:
        timed.append((str(rng.choice(vocab)), at, at + 0.3))
        at += float(rng.uniform(0.3, 1.2))
    engine.reset(seed)
    record: list[object] = []
    report = engine.prime("", user, system, timed, record=record)
    forcing = engine._forcing
    forced = [
        [int(forcing.text[f]), *(int(forcing.codes[k, f]) for k in range(engine.dep_q))]
        for f in range(forcing.frames)
    ]
    emitted: list[list[int] | None] = [None] * forcing.frames
    for step, out in enumerate(record):
        frame = step + 1 - engine.max_delay
        if out is not None and 0 <= frame < forcing.frames:
            emitted[frame] = [int(x) for x in np.asarray(out).reshape(-1)]
    return {
        "report": report.to_dict(),
        "delays": engine.delays,
        "max_delay": engine.max_delay,
        "forced": forced,
        "emitted": emitted,
        "words": len(timed),
        "text_pieces": {w: engine.tokenize(w) for w, _, _ in timed},
    }


if __name__ == "__main__":
    main()
