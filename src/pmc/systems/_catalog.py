"""Where system cards come from: the ones bundled in the package, and a user's own folder.

The paper's configurations ship as package data (``pmc/systems/cards/*.toml``), so a card is
found by name from any folder and after a plain ``pip install``. A user's folder adds cards and
may replace a bundled one of the same name, but never silently: the caller is told
(docs/architecture.md "Systems").
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from pmc.errors import InputError, PmcError
from pmc.systems._adapter import ADAPTERS, reference_row_of
from pmc.systems._card import SystemCard, load_card
from pmc.systems._extras import extra_installed

CARD_SUFFIX = ".toml"
ALL_CARDS = "all"
"""The name that stands for every card there is."""


class CardShadowWarning(UserWarning):
    """A user's card replaces a bundled card of the same name."""


def bundled_cards() -> Path:
    """The folder of the cards that ship with pmc."""
    return Path(str(resources.files("pmc.systems") / "cards"))


@dataclass(frozen=True)
class CardFile:
    """One card's file, and whether it is bundled or replaces a bundled one.

    Attributes:
        name: The card's name (its file name without ``.toml``).
        path: Its file.
        bundled: It ships with pmc.
        shadows: The bundled card it replaces, if it is a user's card that does.
    """

    name: str
    path: Path
    bundled: bool
    shadows: Path | None = None

    @property
    def shadow_message(self) -> str:
        """What the user is told when this card is used in place of a bundled one."""
        return f"{self.path}: this card replaces the bundled card {self.name!r} ({self.shadows})"


Warn = Callable[[str], None]


def _warn(message: str) -> None:
    warnings.warn(message, CardShadowWarning, stacklevel=3)


def card_files(folder: Path | None = None) -> dict[str, CardFile]:
    """Every card by name: the bundled ones, then ``folder``'s, which win with ``shadows`` set."""
    found = {p.stem: CardFile(p.stem, p, True) for p in bundled_cards().glob(f"*{CARD_SUFFIX}")}
    if folder is not None and not folder.is_dir():
        raise PmcError(f"{folder}: no such folder of system cards")
    if folder is None or folder.resolve() == bundled_cards().resolve():
        return dict(sorted(found.items()))
    for path in sorted(folder.glob(f"*{CARD_SUFFIX}")):
        bundled = found.get(path.stem)
        found[path.stem] = CardFile(path.stem, path, False, bundled.path if bundled else None)
    return dict(sorted(found.items()))


def find_card(name_or_path: str, folder: Path | None = None, warn: Warn = _warn) -> SystemCard:
    """A card by name (in ``folder``, else bundled) or by a path to a ``.toml``.

    A card in ``folder`` named like a bundled one is used in its place, and ``warn`` is told.
    """
    if name_or_path.endswith(CARD_SUFFIX):
        path = Path(name_or_path)
        if not path.exists():
            raise InputError(path, "no such system card file")
        return load_card(path)
    files = card_files(folder)
    entry = files.get(name_or_path)
    if entry is None:
        where = f"in {folder} or bundled" if folder else "bundled"
        known = ", ".join(files)
        raise PmcError(f"{name_or_path}: no such system card {where} (known: {known})")
    if entry.shadows is not None:
        warn(entry.shadow_message)
    return load_card(entry.path)


def find_cards(
    names: tuple[str, ...] | list[str], folder: Path | None = None, warn: Warn = _warn
) -> list[SystemCard]:
    """The cards named; ``all`` means every card (bundled and ``folder``'s), by name."""
    if tuple(names) == (ALL_CARDS,):
        names = list(card_files(folder))
    return [find_card(name, folder, warn) for name in names]


@dataclass(frozen=True)
class CardNeeds:
    """What a card needs before it can run, as ``pmc systems list`` shows it.

    Attributes:
        key_env: The environment variable that must hold an API key.
        server: The endpoint of a server the user runs (a card with an endpoint and no key).
        extra: The optional extra its adapter needs (``pip install 'pmc[EXTRA]'``).
        extra_installed: Whether that extra is installed here.
        reference: The reference row it plays, if it is a reference system.
    """

    key_env: str | None = None
    server: str | None = None
    extra: str | None = None
    extra_installed: bool = True
    reference: str | None = None

    def describe(self) -> str:
        """One line: each need, or that it runs here as it is."""
        parts = []
        if self.key_env:
            parts.append(f"a key in ${self.key_env}")
        if self.server:
            parts.append(f"your server at {self.server}")
        if self.extra:
            state = "installed" if self.extra_installed else "not installed"
            parts.append(f"pmc[{self.extra}] ({state})")
        return "; ".join(parts) or "nothing: runs here"


def card_needs(card: SystemCard) -> CardNeeds:
    """What ``card`` needs: a key, a server, an extra (its adapter's, when registered)."""
    factory = ADAPTERS.get(card.adapter)
    extra = None if factory is None else factory.EXTRA
    row = reference_row_of(card)
    return CardNeeds(
        key_env=card.api_key_env,
        server=card.endpoint if card.endpoint and not card.api_key_env else None,
        extra=extra,
        extra_installed=extra is None or extra_installed(extra),
        reference=None if row is None else row.value,
    )
