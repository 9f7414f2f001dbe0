"""What the hosted adapters make of messages the protocol does not know, and of push-back.

Message by message, without a socket: an event type or field the API added since pmc was
written is kept as a signal and counted, never fatal by itself; an ``error`` event says whether
it will pass (a rate limit, an overload) and how long to wait; a malformed message, a known
event missing what pmc reads, and any other error still end the rollout. Whole runs against the
fakes are in ``test_hosted_faults.py`` and ``test_hosted_pushback.py``.
"""

import base64
from typing import Any

import numpy as np
import pytest

from pmc.clock import RealClock
from pmc.systems import (
    EventKind,
    RetryReason,
    SystemAdapter,
    SystemEvent,
    TransportError,
    create_adapter,
    load_card,
    unknown_names,
)
from pmc.systems._websocket import retry_after
from tests.systems.conftest import SYSTEMS

AT = 1_234_567


def _adapter(name: str) -> SystemAdapter:
    return create_adapter(load_card(SYSTEMS / f"{name}.toml"), RealClock())


def _translate(adapter: SystemAdapter, message: dict[str, Any]) -> list[SystemEvent]:
    assert hasattr(adapter, "translate")
    events: list[SystemEvent] = adapter.translate(AT, message)
    return events


def _pcm(samples: int) -> str:
    return base64.b64encode(np.full(samples, 1000, dtype="<i2").tobytes()).decode()


@pytest.mark.parametrize("card", ["gpt-realtime-300", "grok-voice"])
def test_an_unknown_event_type_is_kept_as_a_signal_and_counted(card: str) -> None:
    message = {"type": "response.hologram.delta", "event_id": "e1", "delta": _pcm(4000)}
    (event,) = _translate(_adapter(card), message)
    assert (event.kind, event.arrival_ns) == (EventKind.SIGNAL, AT)
    assert event.detail["event"] == "response.hologram.delta"
    assert event.detail["message"]["event_id"] == "e1"
    assert event.detail["message"]["delta"] == "<10668 base64 chars>"  # audio is not kept
    assert unknown_names(event.detail) == ["event response.hologram.delta"]


def test_known_events_are_not_counted_as_unknown() -> None:
    adapter = _adapter("gpt-realtime-300")
    events = _translate(adapter, {"type": "response.created", "response": {"id": "r1"}})
    events += _translate(adapter, {"type": "response.output_audio.delta", "delta": _pcm(480)})
    assert [e.kind for e in events] == [EventKind.SIGNAL, EventKind.AUDIO]
    assert all(unknown_names(e.detail) == [] for e in events)


def test_an_event_without_a_type_still_fails() -> None:
    with pytest.raises(TransportError, match=r"server event without a type: \['delta'\]") as info:
        _translate(_adapter("gpt-realtime-300"), {"delta": "x"})
    assert info.value.retry is None


def test_a_known_event_missing_what_pmc_reads_still_fails() -> None:
    with pytest.raises(TransportError, match="without an audio delta") as info:
        _translate(_adapter("gpt-realtime-300"), {"type": "response.output_audio.delta"})
    assert info.value.retry is None


@pytest.mark.parametrize(
    ("error", "retry", "wait_s"),
    [
        (
            {
                "type": "rate_limit_error",
                "code": "rate_limit_exceeded",
                "message": "Rate limit reached. Please try again in 1.5s.",
            },
            RetryReason.RATE_LIMITED,
            1.5,
        ),
        (
            {
                "type": "invalid_request_error",
                "code": "rate_limit_exceeded",
                "message": "Try again in 250ms.",
            },
            RetryReason.RATE_LIMITED,
            0.25,
        ),
        (
            {"type": "server_error", "message": "The server had an error."},
            RetryReason.OVERLOADED,
            None,
        ),
        (
            {"type": "invalid_request_error", "code": "server_error", "message": "injected"},
            RetryReason.OVERLOADED,
            None,
        ),
        (
            {
                "type": "invalid_request_error",
                "code": "invalid_value",
                "message": "Invalid value: 'pcm48'.",
            },
            None,
            None,
        ),
    ],
    ids=["rate-limit", "rate-limit-ms", "server-error", "server-error-code", "invalid-request"],
)
def test_an_error_event_ends_the_rollout_and_says_whether_it_will_pass(
    error: dict[str, str], retry: RetryReason | None, wait_s: float | None
) -> None:
    with pytest.raises(TransportError) as info:
        _translate(_adapter("gpt-realtime-300"), {"type": "error", "error": error})
    assert (info.value.retry, info.value.retry_after_s) == (retry, wait_s)
    assert error["message"] in str(info.value)
    assert str(info.value).startswith("system card gpt-realtime-300: server error event (")


def test_gemini_keeps_an_unknown_field_and_still_reads_the_known_ones() -> None:
    message = {
        "serverContent": {"modelTurn": {"parts": [{"inlineData": {"data": _pcm(2400)}}]}},
        "serverHologram": {"depth": 3},
        "serverAura": 1,
    }
    drift, audio = _translate(_adapter("gemini-3.1-flash-live"), message)
    assert unknown_names(drift.detail) == ["field serverAura", "field serverHologram"]
    assert drift.detail["message"]["serverHologram"] == {"depth": 3}
    part = drift.detail["message"]["serverContent"]["modelTurn"]["parts"][0]
    assert part["inlineData"]["data"] == "<6400 base64 chars>"
    assert (audio.kind, len(audio.samples)) == (EventKind.AUDIO, 2400)


def test_gemini_a_message_of_only_unknown_fields_is_one_signal() -> None:
    (event,) = _translate(_adapter("gemini-3.1-flash-live"), {"serverHologram": {}})
    assert unknown_names(event.detail) == ["field serverHologram"]


def test_gemini_going_away_retries_the_rollout() -> None:
    with pytest.raises(TransportError, match="the server is going away") as info:
        _translate(_adapter("gemini-3.1-flash-live"), {"goAway": {"timeLeft": "10s"}})
    assert info.value.retry is RetryReason.GOING_AWAY


def test_gemini_an_empty_message_still_fails() -> None:
    with pytest.raises(TransportError, match="an empty server message") as info:
        _translate(_adapter("gemini-3.1-flash-live"), {})
    assert info.value.retry is None


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("1", 1.0),
        ("2.5", 2.5),
        (" 0 ", 0.0),
        ("-1", None),
        ("Wed, 21 Oct 2026 07:28:00 GMT", None),
        (None, None),
    ],
)
def test_retry_after_headers(header: str | None, seconds: float | None) -> None:
    assert retry_after(header) == seconds
