"""Typed card parameters: each adapter declares its own as a frozen dataclass.

A card's ``[params]`` table is checked against its adapter's record when the card is loaded: a
key the adapter does not take, or a value of the wrong type, is refused with the key and what the
adapter accepts, so a misspelt parameter can never be silently ignored (docs/architecture.md
"Card parameters").
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Union


@dataclass(frozen=True)
class NoParams:
    """The parameters of an adapter that takes none."""


class ParamError(ValueError):
    """A card's parameter that its adapter does not take, or of the wrong type."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def accepted_params(params: type[Any]) -> list[tuple[str, str, Any]]:
    """An adapter's parameters: name, type and default, in declaration order."""
    hints = typing.get_type_hints(params)
    out = []
    for f in dataclasses.fields(params):
        default = f.default if f.default is not dataclasses.MISSING else None
        if f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        out.append((f.name, _type_name(hints[f.name]), default))
    return out


def parse_params(params: type[Any], table: Mapping[str, Any], adapter: str) -> Any:
    """``table`` as ``params`` (an adapter's record); raises :class:`ParamError` naming the key.

    A key the record does not have, a value of the wrong type, and a parameter the record
    needs (one without a default) that the table does not give are each refused.
    """
    hints = typing.get_type_hints(params)
    names = [f.name for f in dataclasses.fields(params)]
    takes = ", ".join(names) or "none"
    for key, value in table.items():
        if key not in hints:
            raise ParamError(
                key, f"adapter {adapter!r} takes no parameter {key!r} (it takes: {takes})"
            )
        if not _fits(value, hints[key]):
            raise ParamError(
                key,
                f"parameter {key!r} of adapter {adapter!r} must be {_type_name(hints[key])}, "
                f"not {value!r}",
            )
    missing = [
        f.name
        for f in dataclasses.fields(params)
        if f.name not in table
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise ParamError(
            missing[0],
            f"adapter {adapter!r} needs the parameter {missing[0]!r} "
            f"({_type_name(hints[missing[0]])}); the card does not give it",
        )
    return params(**table)


def _fits(value: Any, hint: Any) -> bool:
    """Whether a TOML value fits a parameter's annotation (TOML integers fit floats)."""
    if hint is Any:
        return True
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (Union, types.UnionType):
        return any(_fits(value, a) for a in args)
    if origin is Literal:
        return value in args
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin in (list, tuple):
        item = args[0] if args else Any
        return isinstance(value, list | tuple) and all(_fits(v, item) for v in value)
    if origin is dict:
        key, item = args if args else (Any, Any)
        return isinstance(value, dict) and all(
            _fits(k, key) and _fits(v, item) for k, v in value.items()
        )
    if origin is None and isinstance(hint, type):
        return isinstance(value, hint)
    return True  # an annotation this check does not read: the adapter checks it


def _type_name(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(hint))
    if origin is Literal:
        return " or ".join(repr(a) for a in typing.get_args(hint))
    if hint is type(None):
        return "none"
    if origin in (list, tuple):
        return f"a list of {_type_name(typing.get_args(hint)[0])}"
    if origin is dict:
        return f"a table of {_type_name(typing.get_args(hint)[1])}"
    return getattr(hint, "__name__", str(hint))
