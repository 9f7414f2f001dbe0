"""Which bundled cards sit on a curve: the swept card's twins but for the swept settings."""

from __future__ import annotations

from collections.abc import Callable

from pmc.systems import SystemCard, bundled_cards, load_card


def bundled_like(base: SystemCard, same: Callable[[SystemCard], bool]) -> tuple[str, ...]:
    """Bundled cards of ``base``'s adapter and params for which ``same`` holds, by name."""
    out = []
    for path in sorted(bundled_cards().glob("*.toml")):
        card = load_card(path)
        if card.adapter == base.adapter and card.params == base.params and same(card):
            out.append(card.name)
    return tuple(out)
