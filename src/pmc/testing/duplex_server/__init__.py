"""Full-duplex test and bench helpers: the duplex environment, tiny models, servers, fakes.

The Moshi servers need PyTorch and moshi, which live in their own environment
(``.venv-duplex``, built by ``make``); from pmc's own environment they run as subprocesses of
that environment's Python (``_env``, ``_servers``). :class:`FakeMoshi` is an in-process stand-in
for the stock protocol (websockets and sphn, no model) whose answers come at known instants:
each input frame is answered at once with one 80 ms frame of tone and a text piece.
:class:`ListeningMoshi` speaks the same protocol but listens: an energy endpointer decides when
the user's turn ended, and it then says real words starting at a seeded random sample of an
output frame, recording where on its stream clock the speech began (run it in a process of its
own with :func:`listening_moshi_process`). :func:`drive_rollouts` runs rollouts at once against a
duplex card, and ``_codec`` says how the protocol's codec shifts speech in time.
"""

from pmc.testing.duplex_server._behaviour import DuplexAnswer, ListenerBehaviour, ListenerSession
from pmc.testing.duplex_server._codec import (
    OPUS_DELAY_S,
    OPUS_DELAY_SAMPLES,
    OPUS_POST_ECHO_S,
    OPUS_PRE_ECHO_S,
)
from pmc.testing.duplex_server._env import (
    BUILDING_ENV,
    SERVER_ENV,
    build_tiny_models,
    duplex_python,
    model_args,
)
from pmc.testing.duplex_server._fake import FakeMoshi
from pmc.testing.duplex_server._listener import FADE_SAMPLES, ListeningMoshi
from pmc.testing.duplex_server._process import ListenerProcess, listening_moshi_process
from pmc.testing.duplex_server._rollouts import drive_rollouts, pause_point
from pmc.testing.duplex_server._servers import Served, duplex_server, stock_server

__all__ = [
    "BUILDING_ENV",
    "FADE_SAMPLES",
    "OPUS_DELAY_S",
    "OPUS_DELAY_SAMPLES",
    "OPUS_POST_ECHO_S",
    "OPUS_PRE_ECHO_S",
    "SERVER_ENV",
    "DuplexAnswer",
    "FakeMoshi",
    "ListenerBehaviour",
    "ListenerProcess",
    "ListenerSession",
    "ListeningMoshi",
    "Served",
    "build_tiny_models",
    "drive_rollouts",
    "duplex_python",
    "duplex_server",
    "listening_moshi_process",
    "model_args",
    "pause_point",
    "stock_server",
]
