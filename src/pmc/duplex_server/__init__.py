"""``pmc serve-duplex``: our server for moshi-family full-duplex models (Moshi, PersonaPlex).

The stock Moshi server streams live audio only; the paper's protocol gives a full-duplex system
the conversation so far, teacher-forced, before the live stream (docs/architecture.md "Protocol").
This server speaks the stock protocol on ``/api/chat`` and adds ``/api/duplex``, which takes the
history (both speakers' audio and the system's words with their times), forces it into the model
frame by frame at 12.5 Hz and then continues live from that state.

It needs PyTorch and the ``moshi`` package (an optional extra, in its own environment: moshi
pins an old torch, so it is installed with ``--no-deps``; see the README's "Full-duplex
systems"). Nothing here imports them at module level: :mod:`pmc.duplex_server._wire` and
:mod:`pmc.duplex_server._align` are plain Python that the client side shares, and so is
:mod:`pmc.duplex_server._pool`, the registry of a pool of servers on Ray
(``pmc serve-duplex --ray``); :mod:`pmc.duplex_server._supervisor` keeps such a pool's
replicas running, and :mod:`pmc.duplex_server._launch` finds the Python that can run the server.
"""

from pmc.duplex_server._launch import (
    DUPLEX_VENV,
    PYTHON_ENV,
    environment_python,
    in_this_python,
    server_env,
    server_python,
)
from pmc.duplex_server._pool import (
    DEFAULT_POOL,
    POOL_NAMESPACE,
    PoolRegistry,
    PoolState,
    Replica,
    pool_actor_name,
)
from pmc.duplex_server._supervisor import PoolSpec, serve_pool
from pmc.duplex_server._wire import (
    FRAME_SAMPLES,
    HISTORY_CHUNK_BYTES,
    INSTALL_HINT,
    SAMPLE_RATE,
    Kind,
)

__all__ = [
    "DEFAULT_POOL",
    "DUPLEX_VENV",
    "FRAME_SAMPLES",
    "HISTORY_CHUNK_BYTES",
    "INSTALL_HINT",
    "POOL_NAMESPACE",
    "PYTHON_ENV",
    "SAMPLE_RATE",
    "Kind",
    "PoolRegistry",
    "PoolSpec",
    "PoolState",
    "Replica",
    "environment_python",
    "in_this_python",
    "pool_actor_name",
    "serve_pool",
    "server_env",
    "server_python",
]
