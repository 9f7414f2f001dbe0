import re
from pathlib import Path

import pytest

from pmc.clock import VirtualClock
from pmc.errors import InputError, PmcError
from pmc.systems import (
    Family,
    ReferenceRow,
    SystemCard,
    bundled_cards,
    create_adapter,
    find_card,
    load_card,
    reference_row_of,
)

SYSTEMS = bundled_cards()


def test_bundled_cards_load() -> None:
    cards = {p.stem: load_card(p) for p in sorted(SYSTEMS.glob("*.toml"))}
    assert sorted(cards) == [
        "always-speak",
        "endpointer-300",
        "endpointer-500",
        "gemini-3.1-flash-live",
        "gemini-3.1-flash-live-audio-history",
        "gemini-live-detector",
        "gpt-realtime-300",
        "gpt-realtime-300-audio-history",
        "gpt-realtime-500",
        "gpt-realtime-detector",
        "gpt-realtime-semantic-auto-all",
        "gpt-realtime-semantic-detector",
        "gpt-realtime-semantic-high-all",
        "gpt-realtime-semantic-low",
        "gpt-realtime-semantic-low-all",
        "gpt-realtime-semantic-medium-all",
        "grok-voice",
        "grok-voice-audio-history",
        "livekit-turn-detector",
        "livekit-vad",
        "llm-text",
        "moshi",
        "moshi-preloaded",
        "never-speak",
        "openai-compatible",
        "pcm-agent",
        "person",
        "personaplex",
        "personaplex-stock",
        "pipecat-agent",
        "shuffled-person",
        "smart-turn",
        "smart-turn-fast",
        "twilio-agent",
        "vllm-omni-minicpmo",
        "vllm-omni-nemotron",
        "vllm-omni-personaplex",
        "vllm-omni-qwen3-omni",
        "voicebench-agent",
    ]
    endpointer = cards["endpointer-300"]
    assert (endpointer.family, endpointer.frame_ms, endpointer.frame_samples) == (
        Family.LOCAL,
        20,
        480,
    )
    assert endpointer.turn_detection == {"silence_ms": 300}
    assert cards["endpointer-500"].turn_detection == {"silence_ms": 500}
    assert endpointer.to_dict()["name"] == "endpointer-300"


def test_every_bundled_card_reads_back_from_what_a_rollout_records() -> None:
    cards = [load_card(p) for p in sorted(SYSTEMS.glob("*.toml"))]
    assert len(cards) == 39
    for card in cards:
        assert SystemCard.from_dict(card.to_dict()) == card


def test_a_recorded_card_from_a_newer_pmc_is_refused() -> None:
    recorded = {**load_card(SYSTEMS / "person.toml").to_dict(), "schema_version": 99}
    with pytest.raises(ValueError, match="system card schema version 99 is not supported"):
        SystemCard.from_dict(recorded)


def test_duplex_cards_default_to_80_ms_frames(tmp_path: Path) -> None:
    path = tmp_path / "moshi.toml"
    path.write_text('adapter = "moshi"\nfamily = "duplex"\nendpoint = "ws://127.0.0.1:8998"\n')
    card = load_card(path)
    assert (card.frame_ms, card.frame_samples, card.endpoint) == (80, 1920, "ws://127.0.0.1:8998")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('adapter = "x"\nfamily = "robot"\n', "family must be one of local, hosted, duplex"),
        ('family = "local"\n', "'adapter' is required"),
        ('adapter = "x"\nfamily = "local"\ncolour = "red"\n', re.escape("unknown key(s): colour")),
        ('adapter = "x"\nfamily = "local"\nframe_ms = 0\n', "'frame_ms' must be a positive"),
        ('adapter = "x"\nfamily = "local"\nframe_ms = 7\nsample_rate = 22050\n', "whole number"),
        ('adapter = "x\nfamily = "local"\n', "invalid TOML"),
    ],
)
def test_bad_cards_name_the_file_and_the_problem(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(InputError, match=message) as info:
        load_card(path)
    assert str(path) in str(info.value)


def test_find_card_by_name_lists_the_known_ones(tmp_path: Path) -> None:
    assert find_card("person", SYSTEMS).adapter == "person"
    with pytest.raises(PmcError, match=r"nobody: no such system card .*never-speak"):
        find_card("nobody", SYSTEMS)
    with pytest.raises(InputError, match="no such system card file"):
        find_card(str(tmp_path / "nobody.toml"))


def test_unknown_adapter_is_a_clear_error() -> None:
    card = SystemCard("x", "no-such-adapter", Family.LOCAL)
    with pytest.raises(PmcError, match="unknown adapter 'no-such-adapter'"):
        create_adapter(card, VirtualClock())


def test_the_bundled_reference_cards_are_known_by_their_adapter() -> None:
    rows = {p.stem: reference_row_of(load_card(p)) for p in sorted(SYSTEMS.glob("*.toml"))}
    assert {name: row for name, row in rows.items() if row is not None} == {
        "never-speak": ReferenceRow.NEVER_SPEAK,
        "always-speak": ReferenceRow.ALWAYS_SPEAK,
        "person": ReferenceRow.PERSON,
        "shuffled-person": ReferenceRow.SHUFFLED,
    }
    assert reference_row_of(SystemCard("x", "no-such-adapter", Family.LOCAL)) is None
