"""Full-duplex adapters: the stock Moshi protocol and our server's preload route.

``moshi-stock`` speaks the unmodified Moshi (and PersonaPlex) server's live protocol;
``moshi-preloaded`` speaks ``pmc serve-duplex``'s preload route, which teacher-forces the
history before the live stream as the paper's protocol requires (docs/architecture.md "Protocol").
"""

from pmc.systems._duplex_client._moshi_stock import MoshiStockAdapter
from pmc.systems._duplex_client._preloaded import MoshiPreloadedAdapter

__all__ = ["MoshiPreloadedAdapter", "MoshiStockAdapter"]
