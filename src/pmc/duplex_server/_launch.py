"""Where the duplex server runs: this Python, or the duplex environment's.

In this Python where it has PyTorch and moshi, else in the duplex environment's (``make
duplex-env``: moshi pins an old PyTorch, so it lives apart).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from pmc.duplex_server._wire import INSTALL_HINT
from pmc.errors import PmcError

SERVER_MODULES = ("torch", "moshi", "aiohttp", "sphn", "sentencepiece")
"""What the server imports: where they all are, it runs in this Python."""
PYTHON_ENV = "PMC_DUPLEX_PYTHON"
"""Names the duplex environment's Python, where it is not the checkout's ``.venv-duplex``."""
DUPLEX_VENV = Path(__file__).resolve().parents[3] / ".venv-duplex"
"""Where ``make duplex-env`` builds the environment: beside ``src/`` in the checkout (this file
is ``src/pmc/duplex_server/_launch.py`` in an editable install)."""


def in_this_python() -> bool:
    """Whether this Python can run the server itself."""
    return all(importlib.util.find_spec(m) is not None for m in SERVER_MODULES)


def environment_python() -> Path:
    """The duplex environment's Python (:data:`PYTHON_ENV`, else the checkout's), unchecked."""
    override = os.environ.get(PYTHON_ENV)
    return Path(override) if override else DUPLEX_VENV / "bin" / "python"


def server_python() -> str:
    """The server's Python: this one if it has PyTorch and moshi, else the duplex environment's.

    Raises:
        PmcError: Neither has them; it says how to install them.
    """
    if in_this_python():
        return sys.executable
    python = environment_python()
    if not python.exists():
        raise PmcError(INSTALL_HINT)
    return str(python)


def server_env() -> dict[str, str]:
    """The server's environment: this one, with moshi's lazy compilation off unless set."""
    return os.environ | {"NO_TORCH_COMPILE": os.environ.get("NO_TORCH_COMPILE", "1")}
