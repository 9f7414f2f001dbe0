"""How the report names a run's conditions, in every table title and every page heading.

A run under conditions (docs/conditions.md) must never be read as a clean one: each of its
report's table and figure titles, and each of its pages' ``<title>`` and ``<h1>``, ends with what
its systems heard the person through (`` — under babble-10db``). A clean run's headings are
left as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, TypeVar

from pmc.conditions import PRESETS, Condition
from pmc.table import Figure, Table

CLEAN = "clean"
"""What a run without conditions is called where it is compared with one under them."""

Titled = TypeVar("Titled", Table, Figure)


def condition_names(conditions: Sequence[Condition]) -> str:
    """The conditions as ``pmc run --condition`` spells them; ``clean`` for none.

    A parameter is named only where it differs from the preset's (``babble-10db:snr_db=0``),
    so two runs under differently set conditions of one name are told apart.
    """
    if not conditions:
        return CLEAN
    named = (c.name + "".join(f":{k}={_shown(v)}" for k, v in _changed(c)) for c in conditions)
    return ",".join(named)


def same_conditions(a: Sequence[Condition], b: Sequence[Condition]) -> bool:
    """Whether two runs heard the person through the same conditions, whatever their seeds.

    Runs that differ only in their conditions' seeds are repeats of one condition, not a
    comparison of two.
    """
    return [(c.name, c.kind, c.params) for c in a] == [(c.name, c.kind, c.params) for c in b]


def under(conditions: Sequence[Condition]) -> str:
    """What a heading adds for a run under conditions; nothing for a clean run."""
    return f" — under {condition_names(conditions)}" if conditions else ""


def headed(items: Sequence[Titled], conditions: Sequence[Condition]) -> list[Titled]:
    """Tables or figures with the run's conditions named at the end of each title."""
    suffix = under(conditions)
    return [replace(item, title=item.title + suffix) if suffix else item for item in items]


def _changed(condition: Condition) -> list[tuple[str, Any]]:
    defaults = PRESETS[condition.name][1] if condition.name in PRESETS else {}
    return [(k, v) for k, v in condition.params.items() if defaults.get(k) != v]


def _shown(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
