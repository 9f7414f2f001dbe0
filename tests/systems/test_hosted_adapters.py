"""The hosted adapters against their fakes: every card, every point kind, through the harness.

One run of all five bundled hosted cards on four short points (a pause, two turn ends, a fact
recall), each card pointed at the fake of its dialect; the tests read the run's traces and
what each fake recorded.
"""

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from pmc.audio import SAMPLE_RATE
from pmc.clock import RealClock
from pmc.errors import PmcError
from pmc.harness import RunSettings, run_rollouts, runs_dir
from pmc.points import PointKind, read_points
from pmc.systems import create_adapter, find_card
from pmc.testing.hosted import (
    Dialect,
    FakeServer,
    SessionRecord,
    answer_audio,
)
from pmc.testing.hosted._behaviour import COMMIT_DELAY_MS, REPLY_TEXT
from tests.systems.conftest import (
    HOSTED,
    KEY,
    ON_TIME_S,
    SYSTEMS,
    held_off_s,
    load,
    session_of,
    traces,
)


def sessions(
    run: tuple[Path, dict[Dialect, FakeServer]], name: str
) -> dict[str, tuple[dict[str, Any], SessionRecord]]:
    """Each point's trace and the fake's record of its session."""
    run_dir, fakes = run
    fake = fakes[HOSTED[name]]
    return {pid: (t, fake.session(session_of(t))) for pid, t in traces(run_dir, name).items()}


@pytest.mark.parametrize("name", sorted(HOSTED))
def test_every_client_message_is_well_formed_and_the_history_arrives_as_text(
    hosted_run: tuple[Path, dict[Dialect, FakeServer]], name: str
) -> None:
    for _, record in sessions(hosted_run, name).values():
        assert record.violations == []
        assert record.history_turns == 3


@pytest.mark.parametrize("name", sorted(HOSTED))
def test_the_endpointer_is_on_at_pauses_only_and_the_harness_ends_other_turns(
    hosted_run: tuple[Path, dict[Dialect, FakeServer]], name: str, hosted_points: Path
) -> None:
    kinds = {p.point_id: p.kind for p in read_points(hosted_points)}
    dialect = HOSTED[name]
    card = find_card(name, SYSTEMS)
    for pid, (_, record) in sessions(hosted_run, name).items():
        pause = kinds[pid] is PointKind.PAUSE
        assert record.endpointing is pause
        settings = record.settings
        if dialect is Dialect.GEMINI:
            detection = settings["realtimeInputConfig"]["automaticActivityDetection"]
            assert detection == (
                {"disabled": False, **card.turn_detection} if pause else {"disabled": True}
            )
        elif dialect is Dialect.XAI:
            assert settings["turn_detection"] == (card.turn_detection if pause else {"type": None})
        else:
            turns = settings["audio"]["input"]["turn_detection"]
            assert turns == (card.turn_detection if pause else None)
        if pause:
            assert {a.trigger for a in record.answers} == {"vad"}
            continue
        assert [a.trigger for a in record.answers] == [
            "activity_end" if dialect is Dialect.GEMINI else "commit"
        ]
        if dialect is not Dialect.GEMINI:
            commit = record.received.index("input_audio_buffer.commit")
            assert record.received[commit + 1 :] == ["response.create"]


@pytest.mark.parametrize("name", sorted(HOSTED))
def test_answers_arrive_whole_and_on_the_stream_clock_the_fake_used(
    hosted_run: tuple[Path, dict[Dialect, FakeServer]], name: str
) -> None:
    """Odd-byte deltas lose no sample; the first audio arrives when the fake sent it."""
    expected = len(answer_audio(REPLY_TEXT))
    for pid, (trace, record) in sessions(hosted_run, name).items():
        if record.endpointing:
            continue
        (answer,) = record.answers
        audio = [o for o in trace["outputs"] if o["kind"] == "audio"]
        assert sum(o["samples"] for o in audio) == expected, pid
        arrival_s = (audio[0]["arrival_ns"] - trace["t0_ns"]) / 1e9
        assert answer.onset_s is not None
        bound = ON_TIME_S + held_off_s(trace)
        assert abs(arrival_s - answer.onset_s) <= bound, (pid, arrival_s, answer.onset_s, bound)
        text = "".join(o["text"] for o in trace["outputs"] if o["kind"] == "text")
        assert text.split() == REPLY_TEXT.split()


# Semantic VAD at low eagerness waits 8 s: it never answers inside a pause, so nothing of it
# is ever spoken over.
@pytest.mark.parametrize("name", sorted(set(HOSTED) - {"gpt-realtime-semantic-low"}))
def test_speech_over_the_answer_stops_its_playback_and_the_trace_says_so(
    hosted_run: tuple[Path, dict[Dialect, FakeServer]], name: str, hosted_points: Path
) -> None:
    run_dir, _ = hosted_run
    for pid, (trace, record) in sessions(hosted_run, name).items():
        if not record.endpointing:
            continue
        first = record.answers[0]
        assert first.stopped_s is not None and first.onset_s is not None
        stops = [o for o in trace["outputs"] if o["kind"] == "interrupted"]
        assert len(stops) == 1
        assert stops[0]["detail"]["unplayed_ms"] > 0
        stop_s = (stops[0]["arrival_ns"] - trace["t0_ns"]) / 1e9
        assert abs(stop_s - first.stopped_s) <= ON_TIME_S + held_off_s(trace), pid
        track, _ = sf.read(run_dir / "rollouts" / name / pid / "0" / "played.flac", dtype="float32")
        played = track[round(first.onset_s * SAMPLE_RATE) : round(stop_s * SAMPLE_RATE)]
        assert np.sqrt(np.mean(played**2)) > 0.01  # it was heard until the user spoke
        later = [a.onset_s for a in record.answers[1:] if a.onset_s is not None]
        quiet_until = min(later, default=len(track) / SAMPLE_RATE)
        dropped = track[round((stop_s + 0.03) * SAMPLE_RATE) : round(quiet_until * SAMPLE_RATE)]
        assert len(dropped) and np.max(np.abs(dropped)) == 0  # the rest was dropped
        if HOSTED[name] is not Dialect.GEMINI:
            assert "conversation.item.truncate" in record.received


def test_grok_waits_for_committed_plus_half_a_second_and_records_the_wait(
    hosted_run: tuple[Path, dict[Dialect, FakeServer]],
) -> None:
    for pid, (trace, record) in sessions(hosted_run, "grok-voice").items():
        if record.endpointing:
            continue
        requests = [
            o["detail"]
            for o in trace["outputs"]
            if o["detail"].get("type") == "pmc.response_requested"
        ]
        assert len(requests) == 1, pid
        wait = requests[0]
        assert wait["committed"] is True and wait["settle_ms"] == 500
        assert wait["commit_to_committed_ms"] >= COMMIT_DELAY_MS
        assert wait["commit_to_request_ms"] >= COMMIT_DELAY_MS + 500
        (answer,) = record.answers
        assert not answer.text_only  # the request came after the commit was processed
        assert answer.requested_s - answer.turn_end_s >= (COMMIT_DELAY_MS + 500) / 1000 - 0.005


def test_openai_beta_event_names_are_accepted(
    hosted_points: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    from pmc.testing.hosted import fake_in_thread

    with fake_in_thread(Dialect.OPENAI_BETA.session) as fake:
        card = load("gpt-realtime-300", fake.url, tmp_path, point_kinds=["turn_end"])
        tallies = run_rollouts(hosted_points, [card], RunSettings("beta", retries=0))
    assert tallies[card.name].done == 2
    expected = len(answer_audio(REPLY_TEXT))
    for trace in traces(runs_dir(hosted_points) / "beta", card.name).values():
        audio = [o for o in trace["outputs"] if o["kind"] == "audio"]
        assert {o["detail"]["type"] for o in audio} == {"response.audio.delta"}
        assert sum(o["samples"] for o in audio) == expected


def test_a_missing_key_names_its_variable_before_anything_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("XAI_API_KEY", raising=False)
    card = find_card("grok-voice", SYSTEMS)
    with pytest.raises(PmcError, match="set the environment variable XAI_API_KEY"):
        create_adapter(card, RealClock()).prepare(card)
