import re

import click
from click.testing import CliRunner

from pmc.cli import cli
from pmc.cli._bench import bench_harness_command
from pmc.cli._bench_cluster import bench_cluster_command
from pmc.corpus import Channel
from pmc.labels import LabelKind, label_conversation
from pmc.testing.conversations import synthetic_conversation


def test_synthetic_conversation_is_deterministic_and_conversational() -> None:
    conversation = synthetic_conversation(minutes=3, seed=4)
    assert conversation == synthetic_conversation(minutes=3, seed=4)
    assert conversation != synthetic_conversation(minutes=3, seed=5)
    labels = label_conversation(conversation)
    for channel in Channel:
        assert len(labels.of(LabelKind.TURN, channel)) >= 5
    assert labels.of(LabelKind.PAUSE) and labels.of(LabelKind.BACKCHANNEL)
    assert labels.of(LabelKind.OVERLAP)


def test_bench_labels_reports_a_time() -> None:
    result = CliRunner().invoke(cli, ["bench", "labels", "--minutes", "2", "--repeat", "2"])
    assert result.exit_code == 0, result.output
    assert re.search(
        r"2-minute conversation \(\d+ words, \d+ labels\): median [\d.]+ ms", result.output
    )


def test_both_loopback_benches_take_the_same_options_with_the_same_help() -> None:
    shared = {"latency_ms", "seconds", "seed", "json_path"}

    def options(command: click.Command) -> dict[str | None, tuple[object, ...]]:
        return {
            p.name: (tuple(p.opts), getattr(p, "help", None), p.default)
            for p in command.params
            if p.name in shared
        }

    harness, cluster = options(bench_harness_command), options(bench_cluster_command)
    assert set(harness) == shared and harness == cluster
