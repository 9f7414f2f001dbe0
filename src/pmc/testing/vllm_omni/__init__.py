"""A fake vLLM-Omni full-duplex server, and vLLM-Omni's own protocol types to check pmc by.

Both need vLLM-Omni's wheel, installed without its dependencies (``make test`` does):
:data:`INSTALL_HINT`. docs/wire-formats.md section 10 describes the contract.
"""

from pmc.testing.vllm_omni._fake import (
    OmniBehaviour,
    OmniProcess,
    OmniSession,
    omni_process,
    serve_omni,
)
from pmc.testing.vllm_omni._protocol import INSTALL_HINT, VERSION, OmniProtocol, omni_protocol

__all__ = [
    "INSTALL_HINT",
    "VERSION",
    "OmniBehaviour",
    "OmniProcess",
    "OmniProtocol",
    "OmniSession",
    "omni_process",
    "omni_protocol",
    "serve_omni",
]
