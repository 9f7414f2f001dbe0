"""One registry shape for every plug-in: systems, speech recognisers, voices, LLM providers.

Plug-ins register by decorator under the name a setting uses (``faster-whisper``, ``piper``,
``openai``, an adapter name in a system card). A second plug-in under a taken name is refused:
otherwise whichever module happened to import last would silently win. A registry with an
entry-point group also finds plug-ins that other installed packages declare there (their
``[project.entry-points."<group>"]``), loaded when a setting first names one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from importlib import metadata
from typing import Generic, TypeVar

from pmc.errors import PmcError

T = TypeVar("T")


class Registry(Generic[T]):
    """Named factories of one kind.

    Args:
        kind: What is registered, for messages (``"system adapter"``).
        group: The entry-point group where other packages declare more (None: none).
    """

    def __init__(self, kind: str, group: str | None = None) -> None:
        self.kind = kind
        self.group = group
        self._entries: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """A decorator that registers its target under ``name``.

        Raises:
            ValueError: Another definition already holds ``name``. The same definition again
                (its module re-imported) replaces the first.
        """

        def decorate(entry: T) -> T:
            held = self._entries.get(name)
            if held is not None and _origin(held) != _origin(entry):
                raise ValueError(
                    f"{self.kind} {name!r} is registered twice: by {_origin(held)} "
                    f"and by {_origin(entry)}"
                )
            self._entries[name] = entry
            return entry

        return decorate

    def get(self, name: str) -> T | None:
        """The entry under ``name`` (registered here, or declared by a package), or None.

        Raises:
            PmcError: A package declares ``name`` but its entry point does not load.
        """
        if name not in self._entries:
            self._load(name)
        return self._entries.get(name)

    def known(self) -> str:
        """The registered names, sorted and comma-separated, for an error message."""
        return ", ".join(self)

    def __contains__(self, name: object) -> bool:
        return name in self._entries or name in self._declared()

    def __iter__(self) -> Iterator[str]:
        return iter(sorted({*self._entries, *self._declared()}))

    def _declared(self) -> dict[str, metadata.EntryPoint]:
        """What installed packages declare in this registry's group, by name."""
        if self.group is None:
            return {}
        return {ep.name: ep for ep in metadata.entry_points(group=self.group)}

    def _load(self, name: str) -> None:
        point = self._declared().get(name)
        if point is None:
            return
        package = point.dist.name if point.dist is not None else "an installed package"
        try:
            entry = point.load()
        except Exception as exc:  # any import failure of someone else's package
            raise PmcError(
                f"{self.kind} {name!r} from {package} ({point.value}) does not load: "
                f"{type(exc).__name__}: {exc}"
            ) from None
        if name not in self._entries:  # loading it may have registered it already
            self.register(name)(entry)


def _origin(entry: object) -> str:
    module = getattr(entry, "__module__", "?")
    return f"{module}.{getattr(entry, '__qualname__', type(entry).__qualname__)}"


__all__ = ["Registry"]
