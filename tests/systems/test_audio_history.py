"""Hosted systems given the history as audio: every card against its fake, on demo points.

Each audio-history card runs a turn end and a conversation-recall point of the demo (where the
harness ends the input; at a pause the API's own endpointer does, after the same history), and
is scored. Its fake must have received the history as audio items in order, each byte for
byte the stretch of the history cut its message spans (the other speaker's turns always; the
system's own where the card says audio, else as text), and every message must validate against
the official SDK's types (the conformance checks of ``test_hosted_conformance``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pmc import audio
from pmc.harness import RunSettings, preload_for, run_rollouts, runs_dir
from pmc.points import Point, PointKind, points_dir, read_points
from pmc.scoring import ScoreSettings, ScoreStatus, read_scores, run_scoring
from pmc.testing.hosted import Dialect, FakeServer
from tests.systems.conftest import KEY, endpoint_on, fakes_for, linked_points, load, session_of
from tests.systems.conftest import traces as traces_of
from tests.systems.test_hosted_conformance import CHECKS

pytestmark = pytest.mark.slow

AUDIO_HISTORY = {
    "gpt-realtime-300-audio-history": Dialect.OPENAI,
    "gemini-3.1-flash-live-audio-history": Dialect.GEMINI,
    "grok-voice-audio-history": Dialect.XAI,
}
OWN_TURNS_AS_AUDIO = {"gpt-realtime-300-audio-history"}
"""The cards that give the system's own past turns as audio (the others as text)."""


def pick(points: list[Point]) -> list[Point]:
    """A turn end and a conversation-recall point, each with both speakers in its history."""

    def both(p: Point) -> bool:
        return p.history_start_conv_s < p.stream_start_conv_s - 10.0

    chosen = []
    for kind in (PointKind.TURN_END, PointKind.CONVERSATION_RECALL):
        mine = sorted(
            (p for p in points if p.kind is kind and both(p)), key=lambda p: p.prefix_s or 0
        )
        chosen.append(mine[0])
    return chosen


@pytest.fixture(scope="module")
def run(
    demo_points_workdir: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[Dialect, FakeServer]]:
    chosen = pick(read_points(demo_points_workdir))
    workdir = linked_points(demo_points_workdir, chosen, tmp_path_factory.mktemp("audio-history"))
    cards_dir = tmp_path_factory.mktemp("audio-history-cards")
    with (
        pytest.MonkeyPatch.context() as patch,
        fakes_for(list(AUDIO_HISTORY), keep_messages=True, dialects=AUDIO_HISTORY) as fakes,
    ):
        cards = []
        for name, dialect in AUDIO_HISTORY.items():
            card = load(name, endpoint_on(name, fakes[dialect].url), cards_dir)
            assert card.api_key_env and card.params["history"] == "audio"
            patch.setenv(card.api_key_env, KEY)
            cards.append(card)
        tallies = run_rollouts(workdir, cards, RunSettings("audio", retries=0))
    done = {name: (t.done, t.failed) for name, t in tallies.items()}
    assert done == {name: (2, 0) for name in AUDIO_HISTORY}, {
        n: t.causes for n, t in tallies.items()
    }
    folder = runs_dir(workdir) / "audio"
    run_scoring(folder, ScoreSettings(asr="faster-whisper:tiny.en"))
    return folder, fakes


def _history(point: Point, workdir: Path) -> tuple[list[dict[str, Any]], dict[str, bytes]]:
    """The point's history messages, and each side's history as the harness gives it (PCM16)."""
    preload = preload_for(points_dir(workdir), point, seed=0)
    sides = {
        "user": audio.to_pcm16(preload.user_audio).astype("<i2").tobytes(),
        "assistant": audio.to_pcm16(preload.system_audio).astype("<i2").tobytes(),
    }
    return preload.messages, sides


@pytest.mark.parametrize("name", sorted(AUDIO_HISTORY))
def test_the_run_and_scores_complete(
    run: tuple[Path, dict[Dialect, FakeServer]], name: str
) -> None:
    folder, _ = run
    scores = read_scores(folder, name)
    assert len(scores) == 2
    assert {s.status for s in scores} == {ScoreStatus.SCORED}, [s.error for s in scores]


@pytest.mark.parametrize("name", sorted(AUDIO_HISTORY))
def test_the_history_reaches_the_fake_as_audio_byte_for_byte_in_order(
    run: tuple[Path, dict[Dialect, FakeServer]], name: str
) -> None:
    folder, fakes = run
    workdir = folder.parents[1]
    points = {p.point_id: p for p in read_points(workdir)}
    sessions = {r.session_id: r for r in fakes[AUDIO_HISTORY[name]].sessions}
    for point_id, trace in traces_of(folder, name).items():
        point = points[point_id]
        record = sessions[session_of(trace)]
        messages, sides = _history(point, workdir)
        assert len(messages) >= 2 and {m["role"] for m in messages} == {"user", "assistant"}
        assert len(record.history) == len(messages)
        for got, message in zip(record.history, messages, strict=True):
            own = message["role"] == "assistant"
            assert (got.role in ("assistant", "model")) is own
            if own and name not in OWN_TURNS_AS_AUDIO:
                assert (got.text, got.pcm) == (message["text"], b"")
                continue
            assert got.rate == audio.SAMPLE_RATE  # the cards send at the harness's own rate
            first = round((float(message["start_conv_s"]) - point.history_start_conv_s) * 24_000)
            last = round((float(message["end_conv_s"]) - point.history_start_conv_s) * 24_000)
            expected = sides[str(message["role"])][2 * max(0, first) : 2 * last]
            assert len(got.pcm) == len(expected) == 2 * (last - max(0, first))
            assert got.pcm == expected, (point_id, message["text"])


@pytest.mark.parametrize("name", sorted(AUDIO_HISTORY))
def test_every_message_validates_against_the_sdk_types(
    run: tuple[Path, dict[Dialect, FakeServer]], name: str
) -> None:
    _, fakes = run
    dialect = AUDIO_HISTORY[name]
    checked = 0
    for record in fakes[dialect].sessions:
        assert record.messages and record.violations == []
        for raw in record.messages:
            CHECKS[dialect](raw)
            checked += "inlineData" in raw or "input_audio" in raw
    assert checked >= 2  # one session per point, each with audio history
