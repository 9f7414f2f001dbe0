"""Transport faults: each is a transport error with its cause, retried on resume; the run goes on.

Not faults: an event type or field the API added since pmc was written is kept and counted, and
an error the server says will pass (an overload) is retried at once from the start.

One run holds a copy of a hosted card per fault, each at the two turn-end points of
:func:`hosted_points` and each against its own fake, with the fault in that fake's first
session only: the other rollout of the same card completes in the same invocation. Then every
fault is lifted (the refused port gets a server) and the same run is resumed, which retries the
failed rollouts and keeps the finished ones. The protocol's stop rule is shortened (0.5 s of
silence after a reply) to keep each rollout to a few seconds.
"""

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pmc.harness import ProtocolParams, RunSettings, SystemTally, run_rollouts, runs_dir
from pmc.testing.hosted import Dialect, FakeBehaviour, FakeServer, fake_in_thread, serve_fake
from tests.systems.conftest import (
    KEY,
    error_causes,
    load,
    sent_on_time,
    session_of,
    traces,
)

SHORT = "Right, I see."
"""A short answer keeps each rollout to a few seconds."""
QUICK = ProtocolParams(reply_silence_s=0.5, no_reply_s=4.0)
RUN = "faults"


@dataclass(frozen=True)
class Fault:
    dialect: Dialect
    card: str
    behaviour: FakeBehaviour | None
    """None: nothing listens on the card's port (a refused connection)."""
    cause: str
    """In the recorded cause of the failed rollout ("" where nothing fails)."""
    params: tuple[tuple[str, Any], ...] = ()


def once(**fault: Any) -> FakeBehaviour:
    """A fault in the first session only."""
    return FakeBehaviour(reply_text=SHORT, fault_sessions=1, **fault)


FAULTS = {
    "refused": Fault(Dialect.OPENAI, "gpt-realtime-300", None, "cannot connect to ws://127.0.0.1:"),
    "close-mid-stream": Fault(
        Dialect.OPENAI, "gpt-realtime-300", once(close_after=30), "connection lost"
    ),
    "malformed-json": Fault(
        Dialect.XAI, "grok-voice", once(malformed_after=30), "malformed JSON from the server"
    ),
    "unknown-event": Fault(Dialect.OPENAI, "gpt-realtime-500", once(unknown_after=30), ""),
    "unknown-field": Fault(Dialect.GEMINI, "gemini-3.1-flash-live", once(unknown_after=30), ""),
    "server-close": Fault(
        Dialect.GEMINI,
        "gemini-3.1-flash-live",
        once(error_after=30),
        # "connection lost (received ..." or, when the close overtakes a frame being sent,
        # "connection lost while sending (received ...": either way the server's close code
        # and reason reach the error.
        "(received 1011 (internal error) injected fault",
    ),
    "never-acknowledged": Fault(
        Dialect.OPENAI,
        "gpt-realtime-300",
        once(acknowledge=False),
        "handshake timed out: the session settings were not acknowledged within 1 s",
        (("handshake_timeout_s", 1.0),),
    ),
    "slow-opening": Fault(
        Dialect.XAI,
        "grok-voice",
        once(handshake_delay_s=3.0),
        "handshake timed out after 1 s",
        (("handshake_timeout_s", 1.0),),
    ),
    "error-event": Fault(Dialect.OPENAI, "gpt-realtime-300", once(error_after=30), ""),
    "refusing-error": Fault(
        Dialect.XAI,
        "grok-voice",
        once(error_after=30, error_code="invalid_value"),
        "server error event (invalid_request_error/invalid_value): injected fault",
    ),
    "stall": Fault(
        Dialect.OPENAI, "gpt-realtime-300", once(stall_on="response.create", stall_s=1.5), ""
    ),
}
FAILING = sorted(k for k, f in FAULTS.items() if f.cause)


@dataclass
class Outcome:
    first: dict[str, SystemTally]
    first_causes: dict[str, list[str]]
    second: dict[str, SystemTally]
    second_causes: dict[str, list[str]]
    fakes: dict[str, FakeServer]
    run_dir: Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def fake_on_port(port: int) -> Iterator[None]:
    """The OpenAI fake on a given port, from a thread."""
    ready = threading.Event()
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()

    async def main() -> None:
        async with serve_fake(Dialect.OPENAI.session, FakeBehaviour(reply_text=SHORT), port=port):
            ready.set()
            await stop.wait()

    thread = threading.Thread(target=lambda: loop.run_until_complete(main()), daemon=True)
    thread.start()
    assert ready.wait(30)
    try:
        yield
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(30)
        loop.close()


@pytest.fixture(scope="module")
def outcome(hosted_points: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outcome]:
    folder = tmp_path_factory.mktemp("fault-cards")
    port = free_port()
    settings = RunSettings(RUN, retries=0, params=QUICK)
    with ExitStack() as stack, pytest.MonkeyPatch.context() as patch:
        fakes: dict[str, FakeServer] = {}
        cards = []
        for label, fault in FAULTS.items():
            if fault.behaviour is None:
                url = f"ws://127.0.0.1:{port}/v1/realtime?model=gpt-realtime"
            else:
                fakes[label] = stack.enter_context(
                    fake_in_thread(
                        fault.dialect.session,
                        fault.behaviour,
                        auth_header=fault.dialect.auth_header,
                    )
                )
                url = fakes[label].url
            params = dict(fault.params)
            card = load(fault.card, url, folder, label, point_kinds=["turn_end"], **params)
            assert card.api_key_env
            patch.setenv(card.api_key_env, KEY)
            cards.append(card)
        first = run_rollouts(hosted_points, cards, settings)
        run_dir = runs_dir(hosted_points) / RUN
        first_causes = error_causes(run_dir)
        for fake in fakes.values():
            fake.behaviour = FakeBehaviour(reply_text=SHORT)
        with fake_on_port(port):
            second = run_rollouts(hosted_points, cards, settings)
        yield Outcome(first, first_causes, second, error_causes(run_dir), fakes, run_dir)


@pytest.mark.parametrize("label", FAILING)
def test_a_fault_is_a_transport_error_with_its_cause_and_the_run_goes_on(
    outcome: Outcome, label: str
) -> None:
    tally = outcome.first[label]
    refused = FAULTS[label].behaviour is None
    assert (tally.done, tally.failed) == ((0, 2) if refused else (1, 1))
    recorded = outcome.first_causes[label]
    assert len(recorded) == tally.failed > 0
    for cause in recorded:
        assert cause.startswith(f"transport: system card {label}: ")
        assert FAULTS[label].cause in cause, cause
        assert KEY not in cause
    if refused:
        assert all("refused" in c.lower() for c in recorded), recorded


@pytest.mark.parametrize("label", sorted(FAULTS))
def test_failed_rollouts_are_retried_on_resume_and_finished_ones_kept(
    outcome: Outcome, label: str
) -> None:
    first, second = outcome.first[label], outcome.second[label]
    assert (second.done, second.kept, second.failed) == (first.failed, first.done, 0)
    assert label not in outcome.second_causes  # a finished retry removes its error.json
    assert len(traces(outcome.run_dir, label)) == 2


def test_a_passing_server_error_is_retried_from_the_start_within_the_run(
    outcome: Outcome,
) -> None:
    tally = outcome.first["error-event"]
    assert (tally.done, tally.failed, tally.retried) == (2, 0, 1)
    assert tally.retry_reasons == {"overloaded": 1}
    assert 0 < tally.waited_s <= 1.0  # the first backoff: 1 s, jittered down to half at most
    fake = outcome.fakes["error-event"]
    assert len(fake.sessions) == 3  # the faulty session, its retry, the other point
    found = traces(outcome.run_dir, "error-event")
    assert len(found) == 2
    for trace in found.values():
        assert session_of(trace) != fake.sessions[0].session_id  # the failed session left nothing
        assert not [o for o in trace["outputs"] if o["kind"] == "error"]
        assert any(o["kind"] == "audio" for o in trace["outputs"])


@pytest.mark.parametrize(
    ("label", "name"),
    [("unknown-event", "event response.hologram.delta"), ("unknown-field", "field serverHologram")],
)
def test_an_unknown_event_or_field_is_kept_counted_and_the_rollout_goes_on(
    outcome: Outcome, label: str, name: str
) -> None:
    tally = outcome.first[label]
    assert (tally.done, tally.failed, tally.retried) == (2, 0, 0)
    assert tally.unknown == {name: 1}
    kept = [
        o["detail"]
        for trace in traces(outcome.run_dir, label).values()
        for o in trace["outputs"]
        if o["detail"].get("type") == "pmc.unknown"
    ]
    assert len(kept) == 1
    assert name.split(" ")[1] in (kept[0]["event"], *kept[0]["fields"])
    observed = json.loads((outcome.run_dir / "run.json").read_text())["observed"]
    assert observed[label]["unknown"] == {name: 1}


def test_a_stalled_server_answers_late_and_the_trace_shows_when(outcome: Outcome) -> None:
    fake = outcome.fakes["stall"]
    late = 0
    found = traces(outcome.run_dir, "stall")
    assert len(found) == 2
    for trace in found.values():
        (answer,) = fake.session(session_of(trace)).answers
        assert answer.onset_s is not None and answer.onset_sent_s is not None
        late += answer.onset_s >= answer.requested_s + 1.5
        audio = [o for o in trace["outputs"] if o["kind"] == "audio"]
        arrival_s = (audio[0]["arrival_ns"] - trace["t0_ns"]) / 1e9
        assert sent_on_time(arrival_s, answer.onset_s, answer.onset_sent_s, trace)
    assert late == 1
