"""Every client message the hosted adapters send validates against the official SDKs' types.

OpenAI events against the ``openai`` package's ``RealtimeClientEvent`` union, with no field the
types do not know (the SDK's models accept extra fields, so they are looked for here); Gemini
messages against ``google-genai``'s ``LiveClientMessage`` (which forbids unknown fields). xAI
has no official Python SDK: its events share OpenAI's types, except ``session.update``, whose
xAI shape (docs/wire-formats.md section 6) is checked against the model below.
"""

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal

import pytest
from google.genai import _live_converters
from google.genai import types as genai_types
from openai.types.realtime import RealtimeClientEvent
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from pmc.testing.hosted import Dialect, FakeServer
from tests.systems.conftest import HOSTED

OPENAI_EVENT: TypeAdapter[Any] = TypeAdapter(RealtimeClientEvent)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class XaiFormat(_Strict):
    type: Literal["audio/pcm"]
    rate: int


class XaiAudioSide(_Strict):
    format: XaiFormat


class XaiAudio(_Strict):
    input: XaiAudioSide
    output: XaiAudioSide


class XaiTurnDetection(_Strict):
    type: Literal["server_vad"] | None
    threshold: float | None = None
    prefix_padding_ms: int | None = None
    silence_duration_ms: int | None = None


class XaiSession(_Strict):
    voice: str
    instructions: str
    turn_detection: XaiTurnDetection
    audio: XaiAudio


class XaiSessionUpdate(_Strict):
    type: Literal["session.update"]
    session: XaiSession


def unknown_fields(value: Any, path: str = "") -> list[str]:
    """Fields the SDK's (extra-allowing) models took without knowing them."""
    found: list[str] = []
    if isinstance(value, BaseModel):
        found += [f"{path}.{key}" for key in value.model_extra or {}]
        for name in type(value).model_fields:
            found += unknown_fields(getattr(value, name), f"{path}.{name}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            found += unknown_fields(item, f"{path}[{i}]")
    return found


def check_openai(raw: str) -> None:
    event = OPENAI_EVENT.validate_json(raw)
    assert unknown_fields(event) == [], raw[:200]


def check_xai(raw: str) -> None:
    if '"type":"session.update"' in raw:
        XaiSessionUpdate.model_validate_json(raw)
    else:
        check_openai(raw)


SETUP_FIELDS: dict[str, type[BaseModel]] = {
    "generationConfig": genai_types.GenerationConfig,
    "systemInstruction": genai_types.Content,
    "outputAudioTranscription": genai_types.AudioTranscriptionConfig,
    "realtimeInputConfig": genai_types.RealtimeInputConfig,
    "historyConfig": genai_types.HistoryConfig,
}
"""The setup fields we send and their SDK types. ``LiveClientSetup`` lacks
``realtimeInputConfig``, which the SDK itself sends (its converter from ``LiveConnectConfig``
puts it in ``setup``), so a setup is checked field by field and against the converter's layout."""


def sdk_setup_fields() -> set[str]:
    """The setup fields the SDK's own converter writes for a config that sets ours."""
    config = genai_types.LiveConnectConfig(
        response_modalities=[genai_types.Modality.AUDIO],
        system_instruction="x",
        output_audio_transcription=genai_types.AudioTranscriptionConfig(),
        realtime_input_config=genai_types.RealtimeInputConfig(),
        history_config=genai_types.HistoryConfig(initial_history_in_client_content=True),
    )
    params = genai_types.LiveConnectParameters(model="models/m", config=config)
    client = SimpleNamespace(vertexai=False)
    converted = _live_converters._LiveConnectParameters_to_mldev(
        api_client=client,
        from_object=params.model_dump(exclude_none=True),
    )
    return set(converted["setup"])


def check_gemini(raw: str) -> None:
    message = json.loads(raw)
    if "setup" not in message:
        genai_types.LiveClientMessage.model_validate_json(raw)
        return
    setup = message["setup"]
    assert set(setup) <= sdk_setup_fields(), sorted(setup)
    assert isinstance(setup["model"], str)
    for key, model in SETUP_FIELDS.items():
        if key in setup:
            model.model_validate(setup[key])


CHECKS = {Dialect.OPENAI: check_openai, Dialect.XAI: check_xai, Dialect.GEMINI: check_gemini}


@pytest.mark.parametrize("dialect", [Dialect.OPENAI, Dialect.XAI, Dialect.GEMINI])
def test_every_client_message_validates_against_the_sdk_types(
    hosted_run: tuple[Path, dict[Dialect, FakeServer]], dialect: Dialect
) -> None:
    _, fakes = hosted_run
    cards = [name for name, spoken in HOSTED.items() if spoken is dialect]
    assert len(fakes[dialect].sessions) == 4 * len(cards)  # four points a card
    seen: set[str] = set()
    for record in fakes[dialect].sessions:
        assert record.messages
        for raw in record.messages:
            CHECKS[dialect](raw)
            seen.add(record.received[record.messages.index(raw)])
    # Both protocols were exercised: the endpointer's (pauses) and the harness's (turn ends).
    if dialect is Dialect.GEMINI:
        assert seen == {"setup", "clientContent", "realtimeInput"}
    else:
        assert {
            "session.update",
            "conversation.item.create",
            "input_audio_buffer.append",
            "input_audio_buffer.commit",
            "response.create",
            "conversation.item.truncate",
        } <= seen


def test_all_five_cards_were_exercised(hosted_run: tuple[Path, dict[Dialect, FakeServer]]) -> None:
    _, fakes = hosted_run
    assert sum(len(f.sessions) for f in fakes.values()) == 4 * len(HOSTED)


@pytest.mark.parametrize(
    ("check", "raw"),
    [
        (check_openai, '{"type":"input_audio_buffer.append","audio":"AAA=","rate":24000}'),
        (
            check_openai,
            '{"type":"conversation.item.create","item":{"type":"message",'
            '"role":"assistant","content":[{"type":"text","text":"hi"}]}}',
        ),
        (
            check_openai,
            '{"type":"session.update","session":{"type":"realtime",'
            '"audio":{"input":{"turn_detection":{"type":"server_vad","silence_ms":300}}}}}',
        ),
        (
            check_xai,
            '{"type":"session.update","session":{"voice":"eve","instructions":"",'
            '"turn_detection":null,"audio":{"input":{"format":{"type":"audio/pcm","rate":24000}},'
            '"output":{"format":{"type":"audio/pcm","rate":24000}}}}}',
        ),
        (
            check_gemini,
            '{"realtimeInput":{"audio":{"mime_type":"audio/pcm","data":"AAA="},"activity":{}}}',
        ),
        (
            check_gemini,
            '{"setup":{"model":"m","realtimeInputConfig":{"automaticActivityDetection":'
            '{"silenceMs":500}}}}',
        ),
    ],
)
def test_the_checks_reject_what_the_apis_would(check: Any, raw: str) -> None:
    with pytest.raises((ValidationError, AssertionError)):
        check(raw)
