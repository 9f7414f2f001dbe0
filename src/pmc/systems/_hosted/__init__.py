"""Adapters for hosted real-time speech APIs: OpenAI Realtime, Gemini Live, Grok Voice.

Importing this package registers them (``openai-realtime``, ``gemini-live``, ``grok-voice``),
``openai-compatible`` for any server that speaks OpenAI's dialect at its own endpoint, and
``vllm-omni-duplex`` for the full-duplex models vLLM-Omni serves in that dialect's shape.
Each speaks its API's JSON over a plain websocket; tests run them against the fakes in
:mod:`pmc.testing.hosted`, never against the internet.
"""

from pmc.systems._hosted._compatible import OpenAICompatible
from pmc.systems._hosted._gemini import GeminiLive
from pmc.systems._hosted._grok import GrokVoice
from pmc.systems._hosted._history import HistoryMode, history_channel
from pmc.systems._hosted._omni_duplex import OmniDuplex
from pmc.systems._hosted._openai import OpenAIRealtime
from pmc.systems._hosted._session import HostedAdapter, api_key

__all__ = [
    "GeminiLive",
    "GrokVoice",
    "HistoryMode",
    "HostedAdapter",
    "OmniDuplex",
    "OpenAICompatible",
    "OpenAIRealtime",
    "api_key",
    "history_channel",
]
