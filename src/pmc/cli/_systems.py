"""``pmc systems``: the system cards there are, bundled or the user's, and what each needs."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from pmc.cli._ui import command_line, next_step, out, systems_dir_option, warn
from pmc.errors import PmcError
from pmc.systems import (
    ADAPTERS,
    PROTOCOL_PARAMS,
    CardFile,
    SystemCard,
    accepted_params,
    card_files,
    card_needs,
    find_card,
)


@click.group("systems")
def systems() -> None:
    """List the system cards (bundled with pmc, or your own) and show one."""


def _source(entry: CardFile) -> str:
    if entry.bundled:
        return "bundled"
    return f"{entry.path} (replaces the bundled card)" if entry.shadows else str(entry.path)


@systems.command("list")
@systems_dir_option
def list_command(systems_dir: Path | None) -> None:
    """Every card: its name, family, adapter, what it needs to run, and where it comes from.

    A name here is what `pmc run --system NAME` takes. Cards needing nothing run on this
    machine as they are; the others need an API key in an environment variable, a server you
    start (its endpoint is in the card), or an optional extra.
    """
    table = Table(title="System cards", title_justify="left")
    for name in ("name", "family", "adapter", "needs", "card"):
        table.add_column(name, overflow="fold", no_wrap=name == "name")
    first = None
    for name, entry in card_files(systems_dir).items():
        card = find_card(str(entry.path))
        needs = card_needs(card)
        label = f"{name} (reference)" if needs.reference else name
        cells = (label, card.family.value, card.adapter, needs.describe(), _source(entry))
        table.add_row(*(escape(c) for c in cells))
        if first is None and not needs.reference and needs.describe().startswith("nothing"):
            first = name
        if entry.shadows is not None:
            warn(entry.shadow_message)
    out.print(table)
    next_step(command_line("pmc", "systems", "show", first or "person"), why="read one card")


@systems.command("show")
@click.argument("name")
@systems_dir_option
def show_command(name: str, systems_dir: Path | None) -> None:
    """Print the card NAME as it is written, comments and all, with what it needs.

    Then every parameter its adapter takes in [params], with its type and default (a key the
    adapter does not take is refused when the card is loaded). NAME is a card's name (see `pmc
    systems list`) or a path to a .toml. Copy a bundled card into a folder of your own to change
    it, and pass that folder with --systems-dir.
    """
    entries = card_files(systems_dir)
    path = Path(name) if name.endswith(".toml") else None
    if path is None:
        if name not in entries:
            raise PmcError(f"{name}: no such system card (known: {', '.join(entries)})")
        entry = entries[name]
        path = entry.path
        where = _source(entry)
    else:
        where = str(path)
    card = find_card(str(path))
    needs = card_needs(card)
    target = card.name if where == "bundled" else str(path)
    out.print(f"# {card.name}: {where}", markup=False, soft_wrap=True)
    out.print(f"# {path}", markup=False, soft_wrap=True)
    out.print(f"# needs: {needs.describe()}", markup=False, soft_wrap=True)
    if needs.reference:
        out.print(f"# reference row: {needs.reference}", markup=False)
    out.print(path.read_text(encoding="utf-8"), markup=False, soft_wrap=True, end="")
    out.print(_parameters(card), markup=False, soft_wrap=True, end="")
    next_step(
        command_line("pmc", "run", "--workdir", "WORKDIR", "--system", target),
        why="put it at every point of a working directory",
    )


def _parameters(card: SystemCard) -> str:
    """What the card's ``[params]`` may set: its adapter's parameters, then the protocol's."""
    factory = ADAPTERS.get(card.adapter)
    lines = ["", f"# [params] that adapter {card.adapter} takes (name: type = default):"]
    if factory is None:
        lines.append("#   (adapter not installed here)")
    else:
        rows = accepted_params(factory.PARAMS)
        lines += [f"#   {name}: {kind} = {default!r}" for name, kind, default in rows]
        lines += [] if rows else ["#   none"]
    lines.append(f"# and the protocol's, for any adapter: {', '.join(PROTOCOL_PARAMS)}")
    return "\n".join(lines) + "\n"
