"""One registry shape for every plug-in: systems, speech recognisers, voices, LLM providers.

Plug-ins register by decorator under the name a setting uses (``faster-whisper``, ``piper``,
``openai``, an adapter name in a system card). A second plug-in under a taken name is refused:
otherwise whichever module happened to import last would silently win.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """Named factories of one kind.

    Args:
        kind: What is registered, for messages (``"system adapter"``).
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
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
        """The entry under ``name``, or None."""
        return self._entries.get(name)

    def known(self) -> str:
        """The registered names, sorted and comma-separated, for an error message."""
        return ", ".join(sorted(self._entries))

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._entries))


def _origin(entry: object) -> str:
    module = getattr(entry, "__module__", "?")
    return f"{module}.{getattr(entry, '__qualname__', type(entry).__qualname__)}"


__all__ = ["Registry"]
