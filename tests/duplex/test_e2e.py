"""`pmc run` and `pmc score` on demo points for the three duplex cards, against tiny models.

moshi: the unmodified stock server (a), moshi-preloaded and personaplex: `pmc serve-duplex`
(b). The bundled cards are copied with their endpoints pointed at the test servers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pmc.cli import cli
from pmc.systems import EventKind, Family, SystemCard, load_card
from pmc.testing.duplex import drive_rollouts

pytestmark = pytest.mark.slow

SYSTEMS = Path(__file__).resolve().parents[2] / "systems"
CARDS = ("moshi", "moshi-preloaded", "personaplex")
FRAME_NS = 80_000_000


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
def duplex_run(
    duplex_points: Path, stock_url: str, duplex_base: str, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """All three cards at both points, three sessions at once (one per server instance)."""
    folder = tmp_path_factory.mktemp("duplex-cards")
    endpoints = {
        "moshi": stock_url,
        "moshi-preloaded": f"{duplex_base}/api/duplex",
        "personaplex": f"{duplex_base}/api/duplex",
    }
    args = ["run", "--workdir", str(duplex_points), "--clock", "real", "--run-id", "duplex"]
    args += ["--concurrency", "3", "--retries", "0"]
    for name in CARDS:
        args += ["--system", str(_card_copy(name, endpoints[name], folder))]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return duplex_points / "runs" / "duplex"


def _traces(run: Path, system: str) -> list[dict[str, Any]]:
    paths = sorted((run / "rollouts" / system).glob("*/0/trace.json"))
    return [json.loads(p.read_text()) for p in paths]


def test_every_duplex_card_completes_a_run_and_is_scored(duplex_run: Path) -> None:
    for system in CARDS:
        traces = _traces(duplex_run, system)
        assert len(traces) == 2, system
        for trace in traces:
            kinds = [o["kind"] for o in trace["outputs"]]
            assert "audio" in kinds and "text" in kinds, system
            assert trace["protocol"]["stop_reason"] is not None
    args = ["score", "--run", str(duplex_run), "--asr", "faster-whisper:tiny.en"]
    result = CliRunner().invoke(cli, [*args, "--workers", "1"])
    assert result.exit_code == 0, result.output
    for system in CARDS:
        lines = (duplex_run / "scores" / f"{system}.jsonl").read_text().splitlines()
        assert len(lines) == 2, system


def test_the_stock_server_streams_one_answer_per_frame_on_the_frame_clock(
    duplex_run: Path,
) -> None:
    for trace in _traces(duplex_run, "moshi"):
        t0 = trace["t0_ns"]
        inputs = trace["inputs"]
        assert all(s == t0 + (i + 1) * FRAME_NS for i, s, _ in inputs)
        texts = [o for o in trace["outputs"] if o["kind"] == "text"]
        audio_s = sum(o["samples"] for o in trace["outputs"] if o["kind"] == "audio") / 24_000
        # One step per frame received after the first (the tiny LM's max delay is 1 frame);
        # a step sends text unless it sampled padding, which a random model rarely does.
        assert 0.8 * len(inputs) <= len(texts) <= len(inputs)
        assert audio_s >= (len(inputs) - 4) * 0.08
        assert all(o["arrival_ns"] > t0 for o in trace["outputs"])


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
    spans = sorted(
        (r.trace.t0_ns, r.trace.t0_ns + round(r.trace.protocol["stop_stream_s"] * 1e9))
        for r in results
    )
    assert spans[1][0] < spans[0][1], "two sessions ran at once"
    assert spans[2][0] >= min(spans[0][1], spans[1][1]), "the third waited for an instance"
