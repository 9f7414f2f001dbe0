"""Systems: the cards (bundled, or a user's own) and the adapters that speak to each system.

The card format, the adapter interface and registry, the local reference systems, the
endpointer cascade, and the adapters that speak over a websocket: raw PCM, the hosted APIs and
the full-duplex (Moshi-family) servers, all built on :class:`WebsocketAdapter`, which owns the
connection, the receipt stamps and the event queue so that each adapter keeps only its dialect.
"""

from pmc.systems import _baselines as _baselines  # registers the reference systems
from pmc.systems import _duplex_client as _duplex_client  # registers the Moshi-protocol adapters
from pmc.systems import _endpointer as _endpointer  # registers the endpointer cascade
from pmc.systems import _hosted as _hosted  # registers the hosted real-time API adapters
from pmc.systems import _livekit as _livekit  # registers LiveKit's console peer (LiveKit agents)
from pmc.systems import _llm_text as _llm_text  # registers the text-model recall ceiling
from pmc.systems import _pipecat_ws as _pipecat_ws  # registers Pipecat's websocket protocol
from pmc.systems import _smart_turn as _smart_turn  # registers Pipecat's Smart Turn cascade
from pmc.systems import _twilio as _twilio  # registers Twilio Media Streams (phone agents)
from pmc.systems import _voicebench as _voicebench  # registers voicebench's websocket
from pmc.systems import _websocket_pcm as _websocket_pcm  # registers raw PCM over a websocket
from pmc.systems._adapter import (
    ADAPTER_GROUP,
    ADAPTERS,
    LATE_MS,
    UNKNOWN_SIGNAL,
    AdapterFactory,
    EventKind,
    HistoryWord,
    LatencyMark,
    Preload,
    ReferenceReply,
    ReferenceRow,
    RetryReason,
    SystemAdapter,
    SystemEvent,
    TransportError,
    adapter_factory,
    adapter_params,
    create_adapter,
    reference_row_of,
    register_adapter,
    unknown_names,
    unknown_signal,
)
from pmc.systems._card import (
    CARD_SCHEMA_VERSION,
    PROTOCOL_PARAMS,
    Family,
    SystemCard,
    load_card,
)
from pmc.systems._catalog import (
    CardFile,
    CardNeeds,
    CardShadowWarning,
    bundled_cards,
    card_files,
    card_needs,
    find_card,
    find_cards,
)
from pmc.systems._extras import extra_installed
from pmc.systems._hosted import HistoryMode, history_channel
from pmc.systems._local import LocalAdapter
from pmc.systems._params import NoParams, ParamError, accepted_params
from pmc.systems._replay import (
    CascadeSetting,
    ReplayedReply,
    ReplyShape,
    heard_windows,
)
from pmc.systems._replay import replay as replay_cascade
from pmc.systems._smart_turn_replay import (
    SMART_TURN_THRESHOLD,
    SmartTurnReplayer,
    SmartTurnSetting,
    heard_pcm,
    smart_turn_reply,
)
from pmc.systems._websocket import MAX_MESSAGE_BYTES, OPEN_TIMEOUT_S, WebsocketAdapter
from pmc.systems._websocket_pcm import WebsocketPcmAdapter

__all__ = [
    "ADAPTERS",
    "ADAPTER_GROUP",
    "CARD_SCHEMA_VERSION",
    "LATE_MS",
    "MAX_MESSAGE_BYTES",
    "OPEN_TIMEOUT_S",
    "PROTOCOL_PARAMS",
    "SMART_TURN_THRESHOLD",
    "UNKNOWN_SIGNAL",
    "AdapterFactory",
    "CardFile",
    "CardNeeds",
    "CardShadowWarning",
    "CascadeSetting",
    "EventKind",
    "Family",
    "HistoryMode",
    "HistoryWord",
    "LatencyMark",
    "LocalAdapter",
    "NoParams",
    "ParamError",
    "Preload",
    "ReferenceReply",
    "ReferenceRow",
    "ReplayedReply",
    "ReplyShape",
    "RetryReason",
    "SmartTurnReplayer",
    "SmartTurnSetting",
    "SystemAdapter",
    "SystemCard",
    "SystemEvent",
    "TransportError",
    "WebsocketAdapter",
    "WebsocketPcmAdapter",
    "accepted_params",
    "adapter_factory",
    "adapter_params",
    "bundled_cards",
    "card_files",
    "card_needs",
    "create_adapter",
    "extra_installed",
    "find_card",
    "find_cards",
    "heard_pcm",
    "heard_windows",
    "history_channel",
    "load_card",
    "reference_row_of",
    "register_adapter",
    "replay_cascade",
    "smart_turn_reply",
    "unknown_names",
    "unknown_signal",
]
