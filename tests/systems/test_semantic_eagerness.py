"""GPT Realtime's semantic VAD across its range, deciding at every point kind.

A card per eagerness whose endpointer decides at turn ends and recall too, not only at pauses.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pmc.harness import RunSettings, run_rollouts, runs_dir
from pmc.points import read_points
from pmc.systems import SystemCard, load_card
from pmc.testing.hosted import SEMANTIC_TIMEOUT_MS, Dialect
from tests.systems.conftest import (
    EAGERNESS,
    KEY,
    SYSTEMS,
    endpoint_on,
    fakes_for,
    load,
    session_of,
    traces,
)

PAPERS = "gpt-realtime-semantic-low"
"""The paper's semantic card: low eagerness, its endpointer under test at pauses only."""


def name_of(eagerness: str) -> str:
    return f"gpt-realtime-semantic-{eagerness}-all"


@pytest.mark.parametrize("eagerness", EAGERNESS)
def test_each_eagerness_card_is_the_papers_semantic_card_at_every_point(eagerness: str) -> None:
    card = load_card(SYSTEMS / f"{name_of(eagerness)}.toml")
    paper = load_card(SYSTEMS / f"{PAPERS}.toml")
    assert card.turn_detection == {
        "type": "semantic_vad",
        "eagerness": eagerness,
        "create_response": True,
        "interrupt_response": True,
    }
    assert card.endpointing == "all" and card.endpoints_everywhere
    assert paper.endpointing is None and not paper.endpoints_everywhere

    # Everything else (model, voice, rates, concurrency, key) is the paper's card.
    def rest(c: SystemCard) -> SystemCard:
        return dataclasses.replace(c, name="", description="", turn_detection={}, endpointing=None)

    assert rest(card) == rest(paper)


def test_pmc_systems_list_shows_every_eagerness() -> None:
    from click.testing import CliRunner

    from pmc.cli import cli

    result = CliRunner().invoke(cli, ["systems", "list"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    for eagerness in EAGERNESS:
        assert name_of(eagerness) in result.output


def test_the_endpointer_decides_at_turn_ends_and_recall_too(
    hosted_points: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Semantic VAD stays on at every point, and no answer is asked for by a commit.

    Each answer follows the fake's semantic wait for high eagerness (its 2 s).
    """
    name = name_of("high")
    with fakes_for([name], keep_messages=True, dialects={name: Dialect.OPENAI}) as fakes:
        fake = fakes[Dialect.OPENAI]
        card = load(name, endpoint_on(name, fake.url), tmp_path)
        assert card.api_key_env
        monkeypatch.setenv(card.api_key_env, KEY)
        run_id = "eagerness-high"
        tallies = run_rollouts(hosted_points, [card], RunSettings(run_id, retries=0))
        assert (tallies[name].done, tallies[name].failed) == (4, 0), tallies[name].causes
        found = traces(runs_dir(hosted_points) / run_id, name)
        kinds = {p.point_id: p.kind for p in read_points(hosted_points)}
        assert sorted(kinds[pid].value for pid in found) == [
            "fact_recall",
            "pause",
            "turn_end",
            "turn_end",
        ]
        wait_s = SEMANTIC_TIMEOUT_MS["high"] / 1000
        for pid, trace in found.items():
            record = fake.session(session_of(trace))
            assert record.endpointing, pid
            assert record.violations == [], pid
            assert "input_audio_buffer.commit" not in record.received, pid
            answers = record.answers
            assert answers and {a.trigger for a in answers} == {"vad"}, pid
            waited = answers[0].requested_s - answers[0].turn_end_s
            assert wait_s - 0.001 <= waited <= wait_s + 0.1, (pid, waited)
