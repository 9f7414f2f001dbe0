"""Run the unmodified stock Moshi server on a machine without CUDA (tests, CPU trials).

``moshi.server`` loads everything on the device it is told, then its warmup calls
``torch.cuda.synchronize()`` unconditionally, which fails on a CPU-only PyTorch
(docs/dependencies.md section 7). This wrapper makes that call a no-op when CUDA is absent,
keeps PyTorch to one thread (two threads on two busy cores spike to hundreds of milliseconds
per step, same notes), and runs the module exactly as ``python -m moshi.server`` would, with
the same arguments.

``python -m pmc.duplex_server.stock --device cpu --static none --hf-repo local/none
--config-path tiny/config.json --moshi-weight ... --mimi-weight ... --tokenizer ...``
"""

from __future__ import annotations

import os
import runpy
import sys

from pmc.duplex_server._wire import INSTALL_HINT


def main(argv: list[str]) -> None:
    """Start ``moshi.server`` with ``argv``; returns when the server stops."""
    os.environ.setdefault("NO_TORCH_COMPILE", "1")  # compiling costs 3-14 s and needs gcc
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a missing local file fails at once
    try:
        import torch
    except ImportError as exc:
        raise SystemExit(f"{exc}. {INSTALL_HINT}") from None
    torch.set_num_threads(int(os.environ.get("PMC_TORCH_THREADS", "1")))
    if not torch.cuda.is_available():
        torch.cuda.synchronize = lambda *args, **kwargs: None
    sys.argv = ["moshi.server", *argv]
    runpy.run_module("moshi.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
