"""The three vLLM-Omni full-duplex cards against the fake, checked by vLLM-Omni's own parser.

The fake (:mod:`pmc.testing.vllm_omni`, a process of its own) passes every client event through
the server's parser (``command_from_realtime``, with the defaults the session declared) and
builds every event it sends from the server's event classes. Each session's connection is
dropped once, 1.5 s into its input, so every rollout also resumes. Two talk-over points: at the
barge-in the person's clip comes over the answer and the fake yields (``output_audio_buffer.
cleared``). Marked ``waiting`` (tests/conftest.py): it streams on the real clock.
"""

from __future__ import annotations

import base64
import importlib
import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pmc.clock import RealClock
from pmc.points import Point, PointKind
from pmc.systems import EventKind, Preload, bundled_cards, create_adapter, find_card
from pmc.testing.points import HISTORY, write_talk_over_points
from pmc.testing.vllm_omni import OmniBehaviour, OmniProcess, omni_process, omni_protocol
from tests.harness.test_talk_over_run import _pmc, _trace
from tests.systems.conftest import card_at, sent_on_time

pytestmark = pytest.mark.slow

CARDS = ("vllm-omni-minicpmo", "vllm-omni-personaplex", "vllm-omni-nemotron")
PRESETS: dict[str, tuple[str, dict[str, Any]]] = {
    "vllm-omni-minicpmo": ("minicpmo_4_5", {}),
    "vllm-omni-personaplex": ("personaplex", {}),
    "vllm-omni-nemotron": ("nemotron_voicechat", {}),
}
"""Each card's preset in vLLM-Omni's client (``vllm_omni.clients.<module>``)."""
DROP_AFTER_MS = 1500.0
BEHAVIOUR = OmniBehaviour(unit_ms=500.0, barge_in_ms=240.0, drop_after_ms=DROP_AFTER_MS)


@dataclass(frozen=True)
class Run:
    folder: Path
    points: dict[str, Point]
    fake: OmniProcess


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    workdir = tmp_path_factory.mktemp("vllm-omni")
    points = {p.point_id: p for p in write_talk_over_points(workdir)}
    with omni_process(BEHAVIOUR) as fake:
        cards: list[Any] = []
        for name in CARDS:
            cards += ["--system", card_at(name, fake.url, workdir / "cards", resume_backoff_s=0.05)]
        _pmc("run", "--workdir", workdir, "--run-id", "o", "--clock", "real", *cards)
    return Run(workdir / "runs" / "o", points, fake)


def _sessions(run: Run, model: str) -> list[Any]:
    return [s for s in run.fake.sessions if s.query.get("model") == model]


def _model(card: str) -> str:
    return str(find_card(card, bundled_cards()).params["model"])


def test_every_card_opens_with_its_presets_session_and_the_duplex_query() -> None:
    omni_protocol()  # stands in for the packages that import torch or vLLM
    for card_name, (module, overrides) in PRESETS.items():
        card = find_card(card_name, bundled_cards())
        preset = importlib.import_module(f"vllm_omni.clients.{module}")
        expected = preset.create_duplex_session_config(**overrides).to_session_payload(
            model=card.params["model"]
        )
        adapter: Any = create_adapter(card, RealClock())
        silent = np.zeros(0, dtype=np.float32)
        (message,) = adapter.session_messages(Preload("You are Sam.", silent, silent, []))
        sent = message["session"]
        assert sent.pop("instructions") == "You are Sam."
        expected.pop("instructions", None)
        assert sent == expected, card_name
        query = dict(p.split("=") for p in adapter.endpoint().split("?")[1].split("&"))
        assert query["duplex"] == "1" and query["autostart"] == "0"


def test_every_session_completes_and_the_parser_refused_nothing(run: Run) -> None:
    assert len(run.fake.sessions) == len(CARDS) * len(run.points)
    for card in CARDS:
        sessions = _sessions(run, _model(card))
        assert len(sessions) == len(run.points), card
        for session in sessions:
            assert session.refused == [], (card, session.refused)
            assert session.query["duplex"] == "1" and session.query["autostart"] == "0"
            received = session.received
            assert received["session.update"] == 1
            assert received["conversation.item.create"] == len(HISTORY)  # as text items
            assert received["input_audio_buffer.append"] > 0
            assert received["session.event_ack"] > 0 and received["playback.ack"] > 0
            assert received["session.close"] == 1 and session.closed
        for point in run.points.values():
            trace = _trace(run.folder, card, point)
            assert trace["protocol"]["stop_reason"] in ("replied", "cap"), trace["protocol"]


def test_a_dropped_connection_is_resumed_with_nothing_lost(run: Run) -> None:
    """Every server event arrives once; every append goes out once, none after the loss lost.

    The protocol acknowledges no input, so what pmc had written into the connection after the
    server had read its last append is lost with the connection (a real server's unread socket
    buffer is too): pmc records how much it had written (``written_ms``), and the server is
    missing exactly the difference, nothing sent after the resume.
    """
    for card in CARDS:
        sessions = _sessions(run, _model(card))
        for session in sessions:
            assert session.drops == 1 and len(session.resumes) == 1, card
            assert session.received["session.resume"] == 1
            assert session.input_ms > DROP_AFTER_MS + 1000
        for point in run.points.values():
            trace = _trace(run.folder, card, point)
            (resumed,) = [o for o in trace["outputs"] if o["detail"].get("type") == "pmc.resumed"]
            seqs = [
                o["detail"]["server_event_seq"] for o in trace["outputs"] if o["kind"] == "audio"
            ]
            assert seqs == sorted(set(seqs)), card  # none twice, in order
            (session,) = [s for s in sessions if set(seqs) <= set(s.audio_seqs)]
            assert seqs == [s for s in session.audio_seqs if s <= max(seqs)], card  # none missed
            in_flight = resumed["detail"]["written_ms"] - session.input_ms_at_drop
            assert 0 <= in_flight <= 200, (card, in_flight)
            missing = session.last_audio_end_ms - session.input_ms
            assert abs(missing - in_flight) <= 1.0, (card, missing, in_flight)


def test_playback_is_acknowledged_cumulatively_per_answer(run: Run) -> None:
    for card in CARDS:
        for session in _sessions(run, _model(card)):
            played: dict[str, list[int]] = defaultdict(list)
            for response_id, played_ms, committed_ms in session.acks:
                assert response_id and played_ms == committed_ms
                played[response_id].append(played_ms)
            assert played, card
            for series in played.values():
                assert series == sorted(series), (card, series)


def test_a_yield_is_an_interruption_and_the_reply_starts_where_its_audio_came(run: Run) -> None:
    for card in CARDS:
        for point in run.points.values():
            trace = _trace(run.folder, card, point)
            t0 = int(trace["t0_ns"])
            end = t0 + round(float(trace["protocol"]["stop_stream_s"]) * 1e9)
            (session,) = [
                s
                for s in _sessions(run, _model(card))
                if s.onsets_sent_ns and t0 < s.onsets_sent_ns[0] < end
            ]
            first = next(o for o in trace["outputs"] if o["kind"] == "audio")
            arrival = (int(first["arrival_ns"]) - t0) / 1e9
            began, returned = (
                (session.onsets_began_ns[0] - t0) / 1e9,
                (session.onsets_sent_ns[0] - t0) / 1e9,
            )
            assert sent_on_time(arrival, began, returned, trace), (card, arrival, began, returned)
            stops = [o for o in trace["outputs"] if o["kind"] == "interrupted"]
            if point.kind is PointKind.BARGE_IN:
                assert session.yields_ns, card  # the clip came over the answer
                assert stops and stops[0]["detail"]["reason"] == "output_audio_buffer.cleared"
                assert stops[0]["detail"]["unplayed_ms"] > 0


def test_replays_are_dropped_a_clear_stops_playback_and_float_deltas_are_resampled() -> None:
    card = find_card("vllm-omni-nemotron", bundled_cards())
    adapter: Any = create_adapter(card, RealClock())
    tone = (0.1 * np.sin(np.arange(2205) / 5)).astype("<f4")  # 100 ms at 22.05 kHz
    delta = {
        "type": "response.output_audio.delta",
        "response_id": "r1",
        "item_id": "item_r1",
        "delta": base64.b64encode(tone.tobytes()).decode(),
        "format": "pcm_f32le",
        "sample_rate_hz": 22050,
    }
    (audio,) = adapter.decode(0, json.dumps(delta))
    assert audio.kind is EventKind.AUDIO and len(audio.samples) == 2400  # at the card's 24 kHz
    listen = {"type": "response.listen", "response": {"status": "listening"}}
    assert [e.kind for e in adapter.decode(1, json.dumps(listen))] == [EventKind.SIGNAL]
    cleared = {"type": "output_audio_buffer.cleared", "response_id": "r1"}
    _signal, stop = adapter.decode(40_000_000, json.dumps(cleared))
    assert stop.kind is EventKind.INTERRUPTED
    assert stop.detail == {"reason": "output_audio_buffer.cleared", "unplayed_ms": 60.0}
    assert adapter.decode(50_000_000, json.dumps(delta)) == []  # the rest of a stopped answer
