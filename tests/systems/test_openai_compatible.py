"""The ``openai-compatible`` family against the OpenAI fake configured as other servers are.

Three servers on the four short points of ``hosted_points`` (a pause, two turn ends, a fact
recall): vLLM-Omni's turn-based handler (no server VAD, no key, a commit must be ``final`` and
is answered without ``response.create``: the ``vllm-omni-qwen3-omni`` card), a server without
server VAD that takes a key (the ``openai-compatible`` card without its ``[turn_detection]``),
and one with server VAD and no key (the card as bundled). Each fake refuses what its server
would (a key it does not take, turn detection it does not have, a commit without ``final``), so
a rollout that completes is one that spoke the server's variant.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pmc.harness import RunSettings, run_rollouts, runs_dir
from pmc.points import PointKind, read_points
from pmc.systems import load_card
from pmc.testing.hosted import Dialect, FakeBehaviour, FakeServer, fake_in_thread
from tests.systems.conftest import KEY, card_at, session_of, traces

VLLM, NO_VAD, VAD = "vllm-omni-qwen3-omni", "compatible-no-vad", "openai-compatible"
BEHAVIOURS = {
    VLLM: FakeBehaviour(server_vad=False, commit_needs_final=True),
    NO_VAD: FakeBehaviour(server_vad=False),
    VAD: FakeBehaviour(),
}
KEY_ENV = "PMC_TEST_COMPATIBLE_KEY"


@dataclass(frozen=True)
class Compatible:
    run: Path
    kinds: dict[str, PointKind]
    fakes: dict[str, FakeServer]


def _card(name: str, url: str, folder: Path) -> Path:
    """The bundled card behind ``name`` at ``url``, its four sessions at once.

    The no-VAD one is the generic card without its turn detection, taking a key.
    """
    path = card_at(VAD if name == NO_VAD else name, url, folder, as_name=name)
    text = re.sub(r"(?m)^concurrency = .*$", "concurrency = 4", path.read_text())
    if name == NO_VAD:
        text = re.sub(r"(?ms)^\[turn_detection\]\n.*?\n\n", "", text)
        text = text.replace("concurrency = 4\n", f'concurrency = 4\napi_key_env = "{KEY_ENV}"\n')
        text = text.replace('"formats", "turn_detection"]', '"formats"]')
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def compatible(
    hosted_points: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Compatible]:
    folder = tmp_path_factory.mktemp("compatible-cards")
    with pytest.MonkeyPatch.context() as patch, ExitStack() as stack:
        fakes = {
            name: stack.enter_context(
                fake_in_thread(
                    Dialect.OPENAI.session,
                    behaviour,
                    auth_header="Authorization" if name == NO_VAD else "",  # else no key
                    keep_messages=True,
                )
            )
            for name, behaviour in BEHAVIOURS.items()
        }
        patch.setenv(KEY_ENV, KEY)
        urls = {n: re.sub(r"\?.*$", "", fake.url) for n, fake in fakes.items()}  # no model
        cards = [load_card(_card(name, urls[name], folder)) for name in BEHAVIOURS]
        tallies = run_rollouts(hosted_points, cards, RunSettings("compatible", retries=0))
        done = {name: (t.done, t.failed) for name, t in tallies.items()}
        causes = {n: t.causes for n, t in tallies.items()}
        assert done == {name: (4, 0) for name in BEHAVIOURS}, causes
        kinds = {p.point_id: p.kind for p in read_points(hosted_points)}
        yield Compatible(runs_dir(hosted_points) / "compatible", kinds, fakes)


def _sessions(found: Compatible, name: str) -> dict[str, Any]:
    """Each point's session record on ``name``'s fake."""
    fake = found.fakes[name]
    return {p: fake.session(session_of(t)) for p, t in traces(found.run, name).items()}


def _sent(record: Any, kind: str) -> list[dict[str, Any]]:
    messages = [json.loads(m) for m in record.messages]
    return [m for m in messages if m.get("type") == kind]


def test_every_session_spoke_its_servers_variant(compatible: Compatible) -> None:
    for name in BEHAVIOURS:
        sessions = _sessions(compatible, name)
        assert len(sessions) == 4, name
        assert all(record.violations == [] for record in sessions.values()), name


def test_vllm_omni_gets_its_model_and_a_final_commit_and_no_response_create(
    compatible: Compatible,
) -> None:
    for point_id, record in _sessions(compatible, VLLM).items():
        (update,) = _sent(record, "session.update")
        session = update["session"]
        assert session["model"] == "Qwen/Qwen3-Omni-30B-A3B-Instruct"
        assert "turn_detection" not in session["audio"]["input"]
        assert session["audio"]["input"]["format"] == {"type": "audio/pcm", "rate": 24000}
        commits = _sent(record, "input_audio_buffer.commit")
        assert _sent(record, "response.create") == []
        if compatible.kinds[point_id] is PointKind.PAUSE:
            assert commits == [] and record.answers == []  # nothing decides a pause for it
        else:
            assert commits == [{"type": "input_audio_buffer.commit", "final": True}]
            assert record.answers, point_id


def test_a_server_without_vad_is_sent_none_and_answers_only_a_commit(
    compatible: Compatible,
) -> None:
    for point_id, record in _sessions(compatible, NO_VAD).items():
        (update,) = _sent(record, "session.update")
        assert "turn_detection" not in update["session"]["audio"]["input"]
        answered = bool(record.answers)
        assert answered == (compatible.kinds[point_id] is not PointKind.PAUSE), point_id
        if answered:
            assert _sent(record, "input_audio_buffer.commit") == [
                {"type": "input_audio_buffer.commit"}
            ]
            assert _sent(record, "response.create") == [{"type": "response.create"}]


def test_a_server_with_vad_decides_the_pause_and_takes_no_key(compatible: Compatible) -> None:
    for point_id, record in _sessions(compatible, VAD).items():
        (update,) = _sent(record, "session.update")
        detection = update["session"]["audio"]["input"]["turn_detection"]
        if compatible.kinds[point_id] is PointKind.PAUSE:
            assert detection["type"] == "server_vad" and detection["silence_duration_ms"] == 500
            assert _sent(record, "input_audio_buffer.commit") == []
        else:
            assert detection is None
