"""vLLM-Omni's own duplex protocol types, imported without PyTorch or vLLM.

The wheel's package ``__init__`` imports PyTorch, and the modules that hold its Realtime parser
and event classes sit under packages whose ``__init__`` import vLLM. Those package modules are
stood in for by bare ones whose path is the wheel's own folder, so that the modules below them
(the parser, the events, the resume envelope) are the wheel's, unchanged; vLLM's logger, the one
name the voice activity detector's module takes from vLLM, is a standard logger
(docs/wire-formats.md section 10).
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
import types
from dataclasses import dataclass
from functools import cache
from typing import Any

from pmc.errors import PmcError

VERSION = "0.30.0"
"""The vLLM-Omni release the fake and the tests read (installed with ``--no-deps``)."""
INSTALL_HINT = f"pip install --no-deps vllm-omni=={VERSION} pybase64"

_PACKAGES = ("", ".engine", ".entrypoints", ".entrypoints.duplex")
"""The packages stood in for (below ``vllm_omni``): their ``__init__`` import torch or vLLM."""


@dataclass(frozen=True)
class OmniProtocol:
    """The parts of vLLM-Omni's server the fake and the tests use.

    Attributes:
        command_from_realtime: The server's parser of one client event (raises ``error``).
        error: ``DuplexCommandError``, with the server's ``code``.
        defaults: ``RealtimeInputDefaults``: what a session's ``session.update`` declares.
        events: ``vllm_omni.protocol.duplex.events``: the server's event classes.
        parse_resume_request: The server's check of a ``session.resume``.
    """

    command_from_realtime: Any
    error: type[Exception]
    defaults: Any
    events: types.ModuleType
    parse_resume_request: Any


@cache
def omni_protocol() -> OmniProtocol:
    """vLLM-Omni's parser and event types; a missing wheel says how to install it."""
    spec = importlib.util.find_spec("vllm_omni") if "vllm_omni" not in sys.modules else None
    if spec is not None:
        if spec.submodule_search_locations is None:
            raise PmcError(f"vllm_omni at {spec.origin} is not a package ({INSTALL_HINT})")
        root = next(iter(spec.submodule_search_locations))
        for suffix in _PACKAGES:
            name = "vllm_omni" + suffix
            module = types.ModuleType(name)
            module.__path__ = [root + suffix.replace(".", "/")]
            sys.modules.setdefault(name, module)
        if importlib.util.find_spec("vllm") is None:
            vllm, logger = types.ModuleType("vllm"), types.ModuleType("vllm.logger")
            logger.init_logger = logging.getLogger  # type: ignore[attr-defined]
            vllm.__path__ = []
            sys.modules.setdefault("vllm", vllm)
            sys.modules.setdefault("vllm.logger", logger)
    elif "vllm_omni" not in sys.modules:
        raise PmcError(f"the vLLM-Omni fake needs vLLM-Omni's protocol: {INSTALL_HINT}")
    try:
        commands = importlib.import_module("vllm_omni.engine.duplex.commands")
        session = importlib.import_module("vllm_omni.protocol.duplex")
        events = importlib.import_module("vllm_omni.protocol.duplex.events")
        envelope = importlib.import_module("vllm_omni.entrypoints.duplex.realtime_input")
    except ImportError as exc:
        raise PmcError(f"cannot import vLLM-Omni's protocol ({exc}): {INSTALL_HINT}") from None
    return OmniProtocol(
        command_from_realtime=commands.command_from_realtime,
        error=commands.DuplexCommandError,
        defaults=session.RealtimeInputDefaults,
        events=events,
        parse_resume_request=envelope.parse_resume_request,
    )
