import importlib
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
import soxr

from pmc.audio import SAMPLE_RATE, FloatArray, resample
from pmc.clock import NS_PER_S, VirtualClock
from pmc.errors import PmcError
from pmc.systems import Family, SystemCard, SystemEvent, bundled_cards, load_card
from pmc.systems._adapter import EventKind
from pmc.systems._baselines import spoken
from pmc.systems._endpointer import (
    REPLY_TEXT,
    EndpointerCascade,
    SilenceEndpointer,
    extractive_answer,
    is_question,
    reply_to,
)
from pmc.systems._vad import VAD_RATE, WINDOW, StreamingVad, speech_probabilities
from pmc.tts import synthesize
from tests.systems.conftest import stream_live

SYSTEMS = bundled_cards()
LEAD_S = 0.5
TAIL_S = 5.0
LATENCY_S = 1.0
"""Both bundled cards' ``reply_latency_ms``."""
WINDOWS = {"endpointer-300": 10, "endpointer-500": 16}
"""The bundled cards' silence windows, in whole 32 ms VAD windows: 300 ms waits 320 ms, 500 ms
waits 512 ms."""

HISTORY = [
    {"role": "user", "text": "We moved to Leeds last spring. Parking is hard near the flat."},
    {"role": "assistant", "text": "That sounds busy. Did you buy anything for the move?"},
    {"role": "user", "text": "The car I bought in May was dark green. My sister bought a bike."},
    {"role": "assistant", "text": "Lovely. Is the car park at your work any better?"},
]
"""One sentence shares two content words with the question (car, bought); three later ones
share one each, so neither recency nor a single shared word picks the answer."""
ANSWER = "The car I bought in May was dark green."


def silence(seconds: float) -> FloatArray:
    return np.zeros(round(seconds * SAMPLE_RATE), dtype=np.float32)


def phrase(text: str) -> tuple[FloatArray, float]:
    """Piper speech trimmed to its words (no lead or tail silence), and its length in seconds."""
    utterance = synthesize(tuple(text.split()))
    first = round(utterance.spans[0][0] * SAMPLE_RATE)
    last = round(utterance.spans[-1][1] * SAMPLE_RATE)
    return utterance.audio[first:last], (last - first) / SAMPLE_RATE


def card(name: str) -> SystemCard:
    return load_card(SYSTEMS / f"{name}.toml")


def rollout(
    system: SystemCard, audio: FloatArray, history: Sequence[dict[str, Any]] = ()
) -> list[SystemEvent]:
    """Stream ``audio`` live to a new adapter on a virtual clock; its origin is the first sample."""
    clock = VirtualClock()
    return stream_live(EndpointerCascade(system, clock), clock, audio, history)


def first_audio_s(events: list[SystemEvent]) -> float:
    return next(e.arrival_ns for e in events if e.kind == EventKind.AUDIO) / NS_PER_S


def window_s(system: SystemCard) -> float:
    """The silence window the endpointer really waits: whole 32 ms VAD windows (300 -> 320 ms)."""
    adapter = EndpointerCascade(system, VirtualClock())
    return adapter.endpointer.silence_windows * WINDOW / VAD_RATE


@pytest.fixture(scope="module")
def statement() -> tuple[FloatArray, float]:
    """Half a second of silence, a spoken statement, 3 s of silence; and where speech ends."""
    speech, length = phrase("We spent the whole weekend painting the kitchen.")
    return np.concatenate([silence(LEAD_S), speech, silence(TAIL_S)]), LEAD_S + length


@pytest.fixture(scope="module")
def statement_events(statement: tuple[FloatArray, float]) -> dict[str, list[SystemEvent]]:
    audio, _ = statement
    return {name: rollout(card(name), audio) for name in ("endpointer-300", "endpointer-500")}


def test_reply_starts_a_silence_window_and_the_latency_after_speech_ends(
    statement: tuple[FloatArray, float], statement_events: dict[str, list[SystemEvent]]
) -> None:
    _, speech_end = statement
    starts = {}
    assert sorted(statement_events) == sorted(WINDOWS)
    for name, events in statement_events.items():
        assert window_s(card(name)) == WINDOWS[name] * WINDOW / VAD_RATE, name
        expected = speech_end + WINDOWS[name] * WINDOW / VAD_RATE + LATENCY_S
        starts[name] = first_audio_s(events)
        # Late by the VAD's own decay, the 24 -> 16 kHz resampler's buffering and the 20 ms
        # frame: 7 to 93 ms over six Piper sentences when this was written.
        assert abs(starts[name] - expected) <= 0.100, (name, starts[name] - expected)
        texts = [e.text for e in events if e.kind == EventKind.TEXT]
        assert texts == [REPLY_TEXT]
        assert len(np.concatenate([e.samples for e in events])) == len(spoken(REPLY_TEXT))
    # Nominal 200 ms; the windows make it 192 ms, frame and resampler jitter a few tens more.
    assert starts["endpointer-500"] - starts["endpointer-300"] == pytest.approx(0.200, abs=0.070)


@pytest.mark.parametrize("gap_s", [0.2, 0.4])
def test_a_200_ms_pause_inside_speech_does_not_end_the_turn_and_400_ms_does(gap_s: float) -> None:
    first, first_len = phrase("I went to see my aunt on Sunday")
    second, second_len = phrase("and she made a huge lunch for everyone.")
    audio = np.concatenate([silence(LEAD_S), first, silence(gap_s), second, silence(TAIL_S)])
    first_end = LEAD_S + first_len
    speech_end = first_end + gap_s + second_len
    bundled = card("endpointer-300")
    # It never stops its reply here: the second phrase comes over it, which is not this test's.
    system = replace(bundled, params={**bundled.params, "interrupt_ms": False})
    events = rollout(system, audio)
    texts = [e for e in events if e.kind == EventKind.TEXT]
    assert len(texts) == 1  # after 400 ms, the second phrase comes while a reply is due: ignored
    # With the pause shorter than the window, nothing is said before the speech has ended.
    turn_end = speech_end if gap_s < 0.3 else first_end
    assert first_audio_s(events) == pytest.approx(turn_end + window_s(system) + LATENCY_S, abs=0.1)


def test_half_duplex_ignores_a_turn_ending_during_the_reply_and_listens_after_it() -> None:
    never = card("endpointer-300")
    system = replace(never, params={**never.params, "interrupt_ms": False})  # never stops
    reply_s = len(spoken(REPLY_TEXT)) / SAMPLE_RATE
    a, a_len = phrase("I finally finished the book last night.")
    b, b_len = phrase("It was long.")
    c, c_len = phrase("Now I need a new one.")
    a_end = LEAD_S + a_len
    # The reply to A plays from about a_end + 0.72 s for reply_s; B starts and ends inside it.
    b_start = a_end + 1.0
    c_start = a_end + window_s(system) + LATENCY_S + reply_s + 1.0
    audio = np.concatenate(
        [
            silence(LEAD_S),
            a,
            silence(b_start - a_end),
            b,
            silence(c_start - b_start - b_len),
            c,
            silence(TAIL_S),
        ]
    )
    assert b_start + b_len < a_end + window_s(system) + LATENCY_S + reply_s
    events = rollout(system, audio)
    starts = [e.arrival_ns / NS_PER_S for e in events if e.kind == EventKind.TEXT]
    assert len(starts) == 2
    assert starts[0] == pytest.approx(a_end + window_s(system) + LATENCY_S, abs=0.1)
    assert starts[1] == pytest.approx(c_start + c_len + window_s(system) + LATENCY_S, abs=0.1)


@pytest.mark.parametrize("interrupt_ms", [200, 400])
def test_speech_over_the_reply_stops_it_after_the_interrupt_time_and_is_answered(
    interrupt_ms: int,
) -> None:
    """A barge-in: the reply stops once the VAD has heard the person for ``interrupt_ms``."""
    bundled = card("endpointer-300")
    system = replace(bundled, params={**bundled.params, "interrupt_ms": interrupt_ms})
    a, a_len = phrase("I finally finished the book last night.")
    b, b_len = phrase("Which book do you mean, the long one about the river?")
    a_end = LEAD_S + a_len
    reply_start = a_end + window_s(system) + LATENCY_S
    b_start = reply_start + 0.6  # inside the reply, which lasts about 2 s
    audio = np.concatenate([silence(LEAD_S), a, silence(b_start - a_end), b, silence(TAIL_S)])
    events = rollout(system, audio)
    stops = [e for e in events if e.kind == EventKind.INTERRUPTED]
    assert len(stops) == 1 and stops[0].detail == {"barge_in": True}
    stop_s = stops[0].arrival_ns / NS_PER_S
    # The interrupt time in whole 32 ms VAD windows, late by the VAD's own rise, the resampler's
    # buffering and the 20 ms frame (as the endpoint is: within 100 ms).
    windows = -(-interrupt_ms * VAD_RATE // 1000 // WINDOW)
    assert stop_s - b_start == pytest.approx(windows * WINDOW / VAD_RATE, abs=0.1)
    # Nothing of the reply is sent after it stopped; the person's turn is answered after it ends.
    assert not [
        e
        for e in events
        if e.kind == EventKind.AUDIO and stop_s < e.arrival_ns / NS_PER_S < b_start + b_len
    ]
    texts = [e.arrival_ns / NS_PER_S for e in events if e.kind == EventKind.TEXT]
    assert len(texts) == 2
    assert texts[1] == pytest.approx(b_start + b_len + window_s(system) + LATENCY_S, abs=0.1)


def test_a_spoken_question_is_answered_with_the_matching_history_sentence() -> None:
    question, _ = phrase("What colour was the car you bought?")
    audio = np.concatenate([silence(LEAD_S), question, silence(TAIL_S)])
    events = rollout(card("endpointer-300"), audio, HISTORY)
    assert [e.text for e in events if e.kind == EventKind.TEXT] == [ANSWER]
    answer = np.concatenate([e.samples for e in events if e.kind == EventKind.AUDIO])
    np.testing.assert_array_equal(answer, spoken(ANSWER))


def test_the_same_stream_gives_the_same_events(
    statement: tuple[FloatArray, float], statement_events: dict[str, list[SystemEvent]]
) -> None:
    audio, _ = statement
    again = rollout(card("endpointer-300"), audio)
    before = statement_events["endpointer-300"]
    assert [(e.kind, e.arrival_ns, e.text) for e in again] == [
        (e.kind, e.arrival_ns, e.text) for e in before
    ]
    for a, b in zip(again, before, strict=True):
        np.testing.assert_array_equal(a.samples, b.samples)


def test_streamed_vad_probabilities_equal_one_push_and_faster_whispers_own() -> None:
    speech, _ = phrase("Yesterday I went to the market and bought some apples.")
    audio = resample(np.concatenate([silence(LEAD_S), speech, silence(1.0)]), SAMPLE_RATE, VAD_RATE)
    whole = speech_probabilities(audio)
    assert len(whole) == len(audio) // WINDOW
    assert whole.max() > 0.9 and whole[:10].max() < 0.1  # it does hear the speech
    rng = np.random.default_rng(7)
    vad, pieces, start = StreamingVad(), [], 0
    while start < len(audio):
        size = int(rng.choice([0, 1, 63, 320, 511, 512, 513, 2000]))
        pieces.append(vad.push(audio[start : start + size]))
        start += size
    np.testing.assert_array_equal(np.concatenate(pieces), whole)
    assert vad.windows == len(whole)
    batch = importlib.import_module("faster_whisper.vad").get_vad_model()
    np.testing.assert_array_equal(whole, batch(audio[: len(whole) * WINDOW]).ravel())


def test_the_adapters_streamed_resampling_matches_resampling_the_whole_signal() -> None:
    speech, _ = phrase("Yesterday I went to the market and bought some apples.")
    audio = np.concatenate([silence(LEAD_S), speech, silence(1.0)])
    stream = soxr.ResampleStream(SAMPLE_RATE, VAD_RATE, 1, dtype="float32", quality="HQ")
    vad = StreamingVad()
    streamed = np.concatenate(
        [vad.push(stream.resample_chunk(audio[i : i + 480])) for i in range(0, len(audio), 480)]
    )
    whole = speech_probabilities(resample(audio, SAMPLE_RATE, VAD_RATE))
    # The resampler holds back a few tens of ms until the stream ends; what it has let out is
    # the whole-signal resampling exactly, so the windows scored so far are the same.
    assert len(whole) - 2 <= len(streamed) <= len(whole)
    np.testing.assert_array_equal(streamed, whole[: len(streamed)])


def feed(endpointer: SilenceEndpointer, probabilities: Sequence[float]) -> list[int]:
    return [i for i, p in enumerate(probabilities) if endpointer.feed(p)]


def test_endpointer_counts_whole_windows_of_silence_after_enough_speech() -> None:
    endpointer = SilenceEndpointer(threshold=0.5, silence_ms=300, min_speech_ms=250)
    assert (endpointer.silence_windows, endpointer.min_speech_windows) == (10, 8)
    speech, quiet = [0.9] * 8, [0.1] * 20
    assert feed(endpointer, speech + quiet) == [8 + 10 - 1]
    longer = SilenceEndpointer(threshold=0.5, silence_ms=500, min_speech_ms=250)
    assert (longer.silence_windows, longer.min_speech_windows) == (16, 8)
    assert feed(longer, speech + quiet) == [8 + 16 - 1]
    # 7 windows (224 ms) of speech are too few: forgotten, no endpoint.
    assert feed(SilenceEndpointer(0.5, 300, 250), [0.9] * 7 + quiet) == []
    # Between the thresholds: does not start silence, but does not break it either (Silero).
    hover = [0.4] * 5
    assert feed(SilenceEndpointer(0.5, 300, 250), speech + hover + quiet) == [8 + 5 + 10 - 1]
    assert feed(SilenceEndpointer(0.5, 300, 250), [*speech, 0.1, *hover, *quiet]) == [8 + 9]
    # Speech again before the window is up restarts the count.
    assert feed(SilenceEndpointer(0.5, 300, 250), [*speech, *[0.1] * 9, *speech, *quiet]) == [
        8 + 9 + 8 + 10 - 1
    ]


def test_questions_and_extractive_answers() -> None:
    assert is_question("What colour was the car you bought?")
    assert is_question("did you go")
    assert is_question("You went there?")
    assert not is_question("I bought a car.")
    assert extractive_answer("What color was the car you bought?", HISTORY) == ANSWER
    # Ties go to the latest sentence.
    history = [{"role": "user", "text": "The dog barked. The dog slept."}]
    assert extractive_answer("Where was the dog?", history) == "The dog slept."
    assert extractive_answer("Where is the moon?", HISTORY) is None
    assert reply_to("Where is the moon?", HISTORY, "fallback") == "fallback"
    assert reply_to("I like the car you bought.", HISTORY, "fallback") == "fallback"
    assert reply_to("Okay. And the car you bought, what was it like?", HISTORY, "x") == ANSWER
    assert reply_to("", HISTORY, "fallback") == "fallback"


def test_bad_settings_name_the_card() -> None:
    bad = SystemCard("bad", "endpointer-cascade", Family.LOCAL, turn_detection={"threshold": 2})
    with pytest.raises(PmcError, match="system card bad"):
        EndpointerCascade(bad, VirtualClock())
    bad = SystemCard("bad", "endpointer-cascade", Family.LOCAL, params={"reply_latency_ms": "x"})
    with pytest.raises(PmcError, match=r"parameter 'reply_latency_ms' .* must be float"):
        EndpointerCascade(bad, VirtualClock())
