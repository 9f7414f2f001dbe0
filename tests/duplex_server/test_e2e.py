"""`pmc run` and `pmc score` on demo points for the three duplex cards, against tiny models.

moshi: the unmodified stock server (a), moshi-preloaded and personaplex: `pmc serve-duplex`
(b). The bundled cards are copied with their endpoints pointed at the test servers. The stock
server's log says what it did with each frame it handled (and the text it sent for it), so
what the harness recorded is checked against what the server did, however slow the machine.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner

from pmc.cli import cli
from pmc.gate import GateParams
from pmc.harness import ProtocolParams
from pmc.systems import EventKind, Family, SystemCard, bundled_cards, load_card
from pmc.testing.duplex_server import Served, drive_rollouts, stock_server

pytestmark = pytest.mark.slow

SYSTEMS = bundled_cards()
CARDS = ("moshi", "moshi-preloaded", "personaplex")
FRAME_NS = 80_000_000
FRAME_SAMPLES = 1920
"""One 80 ms frame at 24 kHz: what the stock server answers each input frame with."""
CAP_S = 10.0
"""The run's cap on a reply (``pmc run --cap-s``): a random-weight model talks until the cap,
so each turn end streams, steps three models and is transcribed for 10 s past the boundary
instead of the paper's 30."""
PROTOCOL = ProtocolParams(cap_s=CAP_S)
SERVER_SAYS = re.compile(r"accepted connection|text token '(.*?)'\n|frame handled in", re.S)
"""The stock server's log lines about a session (a text piece may hold any character)."""


def _card_copy(name: str, endpoint: str, folder: Path) -> Path:
    """The bundled card with another endpoint (TOML edited as text: the comments stay)."""
    text = (SYSTEMS / f"{name}.toml").read_text()
    text, count = re.subn(r'(?m)^endpoint = ".*"$', f'endpoint = "{endpoint}"', text)
    assert count == 1
    path = folder / f"{name}.toml"
    path.write_text(text)
    assert tomllib.loads(text)["endpoint"] == endpoint
    return path


@pytest.fixture(scope="module")
def stock(tiny_models: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The unmodified stock Moshi server on the tiny models, its log unbuffered.

    This module's own: its log then holds only the sessions
    of this module's run, in order, each line written as it happens.
    """
    log = tmp_path_factory.mktemp("e2e-stock-server") / "server.log"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONUNBUFFERED", "1")
        with stock_server(tiny_models, log) as served:
            yield served


def server_sessions(log: Path) -> list[list[str | None]]:
    """What the stock server says it did, per session in order: each input frame it handled.

    A frame is the text piece the server sent with its answer (None: it sent none).
    """
    sessions: list[list[str | None]] = []
    piece: str | None = None
    for said in SERVER_SAYS.finditer(log.read_text(errors="replace")):
        if said.group(0) == "accepted connection":
            sessions.append([])
        elif said.group(0).startswith("text token"):
            piece = said.group(1)
        else:
            sessions[-1].append(piece)
            piece = None
    return sessions


@pytest.fixture(scope="module")
def duplex_run(
    duplex_points: Path, stock: Served, duplex_base: str, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """All three cards at both points, three sessions at once (one per server instance)."""
    folder = tmp_path_factory.mktemp("duplex-cards")
    endpoints = {
        "moshi": f"{stock.base}/api/chat",
        "moshi-preloaded": f"{duplex_base}/api/duplex",
        "personaplex": f"{duplex_base}/api/duplex",
    }
    args = ["run", "--workdir", str(duplex_points), "--clock", "real", "--run-id", "duplex"]
    args += ["--concurrency", "3", "--retries", "0", "--cap-s", str(CAP_S)]
    for name in CARDS:
        args += ["--system", str(_card_copy(name, endpoints[name], folder))]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return duplex_points / "runs" / "duplex"


def _traces(run: Path, system: str) -> list[dict[str, Any]]:
    paths = sorted((run / "rollouts" / system).glob("*/0/trace.json"))
    assert len(paths) == 2, system  # a pause and a turn end
    return [json.loads(p.read_text()) for p in paths]


def _generated_after(played: Path, trace: dict[str, Any], after_s: float) -> tuple[np.ndarray, int]:
    """What the model sent from ``after_s`` on, its chunks back to back.

    Each chunk is read where the played track placed it (the later of its arrival and the end
    of the one before); a gap where none had arrived yet is the server falling behind on a
    loaded machine, not the model falling quiet, and is left out.
    """
    audio, rate = sf.read(played, dtype="float32")
    t0, cursor, parts = int(trace["t0_ns"]), 0, []
    for output in trace["outputs"]:
        if output["kind"] != "audio" or not output["samples"]:
            continue
        start = max(round((int(output["arrival_ns"]) - t0) * rate / 1e9), cursor)
        cursor = start + int(output["samples"])
        if cursor > after_s * rate:
            parts.append(audio[max(start, round(after_s * rate)) : cursor])
    return np.concatenate(parts), rate


def _longest_quiet_s(audio: np.ndarray, rate: int) -> float:
    """The longest stretch of ``audio`` that the harness's speech monitor hears as quiet."""
    gate = GateParams()
    size = round(gate.window_s * rate)
    n = len(audio) // size
    frames = audio[: n * size].astype(np.float64).reshape(n, size)
    loud = np.sqrt((frames**2).mean(axis=1)) >= gate.open_rms
    edges = np.flatnonzero(np.concatenate(([True], loud, [True])))
    return float((np.diff(edges) - 1).max()) * gate.window_s


def test_every_duplex_card_completes_a_run_and_is_scored(duplex_run: Path) -> None:
    for system in CARDS:
        traces = _traces(duplex_run, system)
        assert sorted(t["protocol"]["kind"] for t in traces) == ["pause", "turn_end"], system
        for trace in traces:
            kinds = [o["kind"] for o in trace["outputs"]]
            assert "audio" in kinds and "text" in kinds, system
    args = ["score", "--run", str(duplex_run), "--asr", "faster-whisper:tiny.en"]
    result = CliRunner().invoke(cli, [*args, "--workers", "1"])
    assert result.exit_code == 0, result.output
    for system in CARDS:
        lines = (duplex_run / "scores" / f"{system}.jsonl").read_text().splitlines()
        assert len(lines) == 2, system


def test_each_point_kind_stops_where_the_protocol_says(duplex_run: Path) -> None:
    """A pause drains 3 s (the system spoke, so no more); a turn end runs to the run's cap.

    A random-weight model never falls quiet: its output is noise far above the monitor's gate
    (checked here on what it sent, back to back: a loaded server's late frames leave gaps in
    the played track that are not the model's), so after the boundary it is never silent for
    the 2 s that would stop it as ``replied``, and it sends words, so never ``no_reply``: the
    cap is the only stop the protocol allows it.
    """
    frame_s = FRAME_NS / 1e9
    for system in CARDS:
        for trace in _traces(duplex_run, system):
            protocol = trace["protocol"]
            stop_s, reason = protocol["stop_stream_s"], protocol["stop_reason"]
            where = (system, protocol["kind"], reason, stop_s)
            if protocol["kind"] == "pause":
                # The first frame deadline past the 3 s drain after the live audio: 38 frames.
                drain_s = (int(PROTOCOL.pause_drain_s / frame_s) + 1) * frame_s
                assert reason == "drained", where
                assert stop_s == pytest.approx(protocol["live_s"] + drain_s, abs=1e-6), where
                continue
            boundary = protocol["boundary_stream_s"]
            played = duplex_run / "rollouts" / system / trace["point_id"] / "0" / "played.flac"
            sent = _generated_after(played, trace, boundary)
            assert _longest_quiet_s(*sent) < PROTOCOL.reply_silence_s, where
            assert any(o["kind"] == "text" and o["text"].strip() for o in trace["outputs"])
            assert reason == "cap", where
            assert boundary + PROTOCOL.cap_s <= stop_s + 1e-6, where
            assert stop_s < boundary + PROTOCOL.cap_s + frame_s, where


def test_the_stock_server_streams_one_answer_per_frame_on_the_frame_clock(
    duplex_run: Path, stock: Served
) -> None:
    """Every frame the server handled is answered by one frame and its text, in order.

    Checked against the server's own log, not against real time: on a loaded machine the
    server falls behind, and the frames it has not handled by the stop go unanswered.
    """
    traces = sorted(_traces(duplex_run, "moshi"), key=lambda t: int(t["t0_ns"]))
    sessions = server_sessions(stock.log)
    assert len(sessions) == len(traces)  # the card's concurrency is 1: sessions in turn
    for trace, handled in zip(traces, sessions, strict=True):
        t0 = trace["t0_ns"]
        inputs = trace["inputs"]
        assert all(s == t0 + (i + 1) * FRAME_NS for i, s, _ in inputs)
        assert all(o["arrival_ns"] > t0 for o in trace["outputs"])
        answers = [o for o in trace["outputs"] if o["kind"] == "audio"]
        assert {o["samples"] for o in answers} == {FRAME_SAMPLES}
        # The server handled only frames it was sent; the first primes the model, unanswered.
        assert len(answers) + 1 <= len(handled) <= len(inputs)
        # A step sends text unless it sampled padding, which a random model rarely does.
        pieces = [p for p in handled if p is not None]
        assert 0.8 * len(handled) <= len(pieces) < len(handled)
        # Frame i's text follows its answer (the i-th) on the socket: nothing lost, merged or
        # reordered. Only the last answer's text may be cut off by the close.
        expected = [(i, p) for i, p in enumerate(handled[: len(answers) + 1]) if p is not None]
        got, heard = [], 0
        for output in trace["outputs"]:
            heard += output["kind"] == "audio"
            if output["kind"] == "text":
                got.append((heard, output["text"]))
        assert got == expected[: len(got)] and len(got) >= len(expected) - 1
        # Each answer comes after its frame was sent (frame 0 is unanswered). Answers go on
        # arriving while the session closes; the slowest of them says how far behind the server
        # fell: every frame sent longer than that (plus 4 frames) before the stop had time to be
        # answered by then, and was. (Not the slowest by the stop: a loaded server falls further
        # behind as it goes, 2.5 s by the stop in one fresh run and more after it, so the last
        # frames sent before the stop were answered after it.)
        sent = [s for _, _, s in inputs]
        lags = [a["arrival_ns"] - sent[j + 1] for j, a in enumerate(answers)]
        assert min(lags) > 0
        stop_ns = t0 + round(trace["protocol"]["stop_stream_s"] * 1e9)
        by_stop = [lag for a, lag in zip(answers, lags, strict=True) if a["arrival_ns"] <= stop_ns]
        assert by_stop, "no answer came while the stream ran"
        due = sum(s < stop_ns - max(lags) - 4 * FRAME_NS for s in sent[1:])
        assert len(by_stop) >= due, (len(by_stop), due, max(lags))


def test_the_preloaded_cards_report_what_was_forced(duplex_run: Path) -> None:
    for system, prompted in (("moshi-preloaded", False), ("personaplex", True)):
        for trace in _traces(duplex_run, system):
            primed = [o for o in trace["outputs"] if o["detail"].get("type") == "primed"]
            assert len(primed) == 1, system
            detail = primed[0]["detail"]
            assert detail["history_frames"] > 100 and detail["truncated_frames"] == 0
            assert detail["forced_words"] > 10
            assert (detail["prompt_frames"] > 0) is prompted
            assert primed[0]["arrival_ns"] <= trace["t0_ns"], "forced before the clock starts"


def test_the_stock_adapter_speaks_personaplex_query_parameters(duplex_base: str) -> None:
    # The bundled personaplex-stock card, pointed at our server's /api/chat, which honours
    # PersonaPlex's text_prompt and seed (voice_prompt is accepted) and, like PersonaPlex, sends
    # the handshake only after forcing the prompt.
    bundled = load_card(SYSTEMS / "personaplex-stock.toml")
    assert bundled.params["identity_prompt"] and bundled.params["send_seed"]
    assert "voice_prompt" in bundled.params["query"]
    card = dataclasses.replace(bundled, endpoint=f"{duplex_base}/api/chat")
    (result,) = asyncio.run(drive_rollouts(card, 1, live_s=1.6, history_s=0.0))
    kinds = {o.kind for o in result.trace.outputs}
    assert {EventKind.AUDIO, EventKind.TEXT} <= kinds
    assert result.trace.audit.frames >= 20 + 37  # live frames, then the 3 s drain


def test_a_session_waits_for_a_free_model_instance(duplex_base: str) -> None:
    # The test server has two instances: of three sessions opened at once, the third is
    # handed over (its handshake, the stream clock's origin) only once one of the first two
    # has ended.
    card = SystemCard(
        "pool",
        "moshi-preloaded",
        Family.DUPLEX,
        endpoint=f"{duplex_base}/api/duplex",
        frame_ms=80,
        concurrency=3,
    )
    results = asyncio.run(drive_rollouts(card, 3, live_s=1.6, history_s=1.0))
    spans = []
    for r in results:
        assert r.trace.protocol is not None
        spans.append((r.trace.t0_ns, r.trace.t0_ns + round(r.trace.protocol.stop_stream_s * 1e9)))
    spans.sort()
    assert spans[1][0] < spans[0][1], "two sessions ran at once"
    assert spans[2][0] >= min(spans[0][1], spans[1][1]), "the third waited for an instance"
