"""The plug-in registry: names resolve, a taken name is refused, a re-import is not a clash."""

import pytest

from pmc.registry import Registry


def _first() -> str:
    return "first"


def _second() -> str:
    return "second"


def test_a_registered_name_resolves_and_unknown_names_are_listed() -> None:
    registry: Registry[object] = Registry("widget")
    registry.register("b")(_second)
    registry.register("a")(_first)
    assert registry.get("a") is _first
    assert registry.get("missing") is None
    assert registry.known() == "a, b"
    assert list(registry) == ["a", "b"]
    assert "b" in registry


def test_a_second_definition_under_a_taken_name_is_refused() -> None:
    registry: Registry[object] = Registry("widget")
    registry.register("x")(_first)
    with pytest.raises(
        ValueError, match=r"widget 'x' is registered twice: by .*_first and by .*_second"
    ):
        registry.register("x")(_second)
    assert registry.get("x") is _first


def test_the_same_definition_again_replaces_itself() -> None:
    registry: Registry[object] = Registry("widget")
    registry.register("x")(_first)
    registry.register("x")(_first)
    assert registry.get("x") is _first


def test_every_plugin_registry_refuses_a_clash() -> None:
    from pmc.asr import register_transcriber
    from pmc.llm import register_llm
    from pmc.systems import register_adapter
    from pmc.tts import register_tts

    with pytest.raises(ValueError, match="system adapter 'person' is registered twice"):
        register_adapter("person")(object)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="speech recogniser 'faster-whisper' is registered twice"):
        register_transcriber("faster-whisper")(lambda model: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(ValueError, match="LLM provider 'openai' is registered twice"):
        register_llm("openai")(lambda model: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(ValueError, match="text-to-speech backend 'piper' is registered twice"):
        register_tts("piper")(lambda: None)  # type: ignore[arg-type,return-value]
