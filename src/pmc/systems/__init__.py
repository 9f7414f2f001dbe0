"""Systems: cards in ``systems/*.toml`` and the adapters that speak to each system.

Built so far: the card format and the adapter interface and registry; the local, hosted and
full-duplex adapters come next.
"""

from pmc.systems._adapter import (
    AdapterFactory,
    EventKind,
    Preload,
    SystemAdapter,
    SystemEvent,
    create_adapter,
    register_adapter,
)
from pmc.systems._card import CARD_SCHEMA_VERSION, Family, SystemCard, find_card, load_card

__all__ = [
    "CARD_SCHEMA_VERSION",
    "AdapterFactory",
    "EventKind",
    "Family",
    "Preload",
    "SystemAdapter",
    "SystemCard",
    "SystemEvent",
    "create_adapter",
    "find_card",
    "load_card",
    "register_adapter",
]
