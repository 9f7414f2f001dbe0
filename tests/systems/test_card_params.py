"""Cards with a schema: each adapter's parameters are typed, and a wrong one is refused by name."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from pmc.errors import InputError, PmcError
from pmc.systems import (
    ADAPTERS,
    PROTOCOL_PARAMS,
    Family,
    SystemCard,
    accepted_params,
    adapter_params,
    bundled_cards,
    load_card,
)

BUNDLED = sorted(bundled_cards().glob("*.toml"))
ONE_PER_ADAPTER = {tomllib.loads(p.read_text())["adapter"]: p for p in reversed(BUNDLED)}
"""A bundled card of each adapter pmc ships."""


def test_every_bundled_card_loads_with_its_adapters_typed_parameters() -> None:
    for path in BUNDLED:
        card = load_card(path)
        params = adapter_params(card)
        assert type(params) is ADAPTERS.get(card.adapter).PARAMS  # type: ignore[union-attr]
        written = tomllib.loads(path.read_text()).get("params", {})
        assert card.to_dict()["params"] == written, path.name  # run records read as before
        assert not set(card.params) & set(PROTOCOL_PARAMS)


@pytest.mark.parametrize("adapter", sorted(ONE_PER_ADAPTER))
def test_a_misspelt_parameter_is_refused_with_the_file_the_key_and_what_is_taken(
    adapter: str, tmp_path: Path
) -> None:
    bundled = ONE_PER_ADAPTER[adapter]
    family = tomllib.loads(bundled.read_text())["family"]
    taken = [name for name, _, _ in accepted_params(ADAPTERS.get(adapter).PARAMS)]  # type: ignore[union-attr]
    misspelt = f"{taken[0]}s" if taken else "volume"
    path = tmp_path / f"{adapter}.toml"
    path.write_text(f'adapter = "{adapter}"\nfamily = "{family}"\n\n[params]\n{misspelt} = 1\n')
    with pytest.raises(InputError) as caught:
        load_card(path)
    error = caught.value
    assert error.path == str(path) and error.where == f"params.{misspelt}"
    assert f"adapter {adapter!r} takes no parameter {misspelt!r}" in error.message
    assert f"(it takes: {', '.join(taken) or 'none'})" in error.message


@pytest.mark.parametrize(
    ("adapter", "line", "message"),
    [
        (
            "openai-realtime",
            "voice = 3",
            "parameter 'voice' of adapter 'openai-realtime' must be str",
        ),
        ("openai-realtime", 'history = "video"', "must be 'text' or 'audio'"),
        ("endpointer-cascade", "interrupt_ms = true", "must be float or False"),
        ("moshi-preloaded", 'max_history_frames = "all"', "must be int or none"),
        ("person", 'reference = "mine"', "params.reference is 'own' or 'shuffled'"),
        ("person", 'preload_timeout_s = "ten"', "params.preload_timeout_s must be a number"),
        ("llm-text", 'point_kinds = "pause"', "params.point_kinds must be a list"),
    ],
)
def test_a_parameter_of_the_wrong_type_is_refused(
    adapter: str, line: str, message: str, tmp_path: Path
) -> None:
    path = tmp_path / "card.toml"
    path.write_text(f'adapter = "{adapter}"\nfamily = "local"\n\n[params]\n{line}\n')
    with pytest.raises(InputError, match=message) as caught:
        load_card(path)
    assert caught.value.where == f"params.{line.split(' ', 1)[0]}"


def test_protocol_settings_are_typed_fields_written_back_where_the_card_had_them() -> None:
    card = load_card(bundled_cards() / "smart-turn-fast.toml")
    assert card.point_kinds == ("pause", "turn_end")
    assert "point_kinds" not in card.params
    assert card.to_dict()["params"]["point_kinds"] == ["pause", "turn_end"]
    assert SystemCard.from_dict(card.to_dict()) == card
    person = load_card(bundled_cards() / "shuffled-person.toml")
    assert (person.reference, person.recall_latency_ms) == ("shuffled", None)
    in_code = SystemCard("p", "person", Family.LOCAL, params={"reference": "shuffled"})
    assert in_code.reference == "shuffled" and in_code.params == {}


def test_a_card_made_in_code_is_checked_when_its_adapter_is_made() -> None:
    card = SystemCard("x", "endpointer-cascade", Family.LOCAL, params={"reply_txt": "Hi."})
    with pytest.raises(PmcError, match="system card x: adapter 'endpointer-cascade' takes no"):
        adapter_params(card)


def test_a_parameter_the_adapter_needs_is_refused_when_the_card_leaves_it_out(
    tmp_path: Path,
) -> None:
    import pmc.testing.systems  # noqa: F401  # registers the fakes' adapters, "held" among them

    path = tmp_path / "held.toml"
    path.write_text('adapter = "held"\nfamily = "local"\n\n[params]\nwaiting = "w"\n')
    with pytest.raises(InputError, match="adapter 'held' needs the parameter 'release'") as caught:
        load_card(path)
    assert caught.value.where == "params.release"
    path.write_text('adapter = "held"\nfamily = "local"\n\n[params]\nrelease = "r"\n')
    assert load_card(path).params == {"release": "r"}
