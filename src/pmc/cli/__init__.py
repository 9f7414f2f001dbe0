"""The ``pmc`` command line: one command per pipeline stage."""

from __future__ import annotations

from typing import Any

import click

from pmc import __version__
from pmc.cli._bench import bench
from pmc.cli._bench_cluster import bench_cluster_command
from pmc.cli._calibrate import calibrate_gate_command
from pmc.cli._check import check_command
from pmc.cli._corpus import corpus
from pmc.cli._curve import curve_command
from pmc.cli._demo import demo
from pmc.cli._duplex import bench_duplex_command, serve_duplex_command
from pmc.cli._export import export
from pmc.cli._labels import labels_command, select_command
from pmc.cli._leaderboard import leaderboard_command
from pmc.cli._points import points_command
from pmc.cli._report import report_command
from pmc.cli._review import review
from pmc.cli._run import run_command
from pmc.cli._score import score_command
from pmc.cli._systems import systems
from pmc.errors import PmcError


class _Group(click.Group):
    """Prints a :class:`PmcError` as one line instead of a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PmcError as exc:
            raise click.ClickException(str(exc)) from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pmc")
def cli() -> None:
    """PeopleMakingConversation: does a real-time speech system converse the way people do?

    The pipeline runs corpus -> labels -> points -> rollouts -> scores -> report; each stage is
    a command that reads what the previous one wrote into a working directory (--workdir).
    """


cli.add_command(systems)
cli.add_command(corpus)
cli.add_command(labels_command)
cli.add_command(select_command)
cli.add_command(points_command)
cli.add_command(review)
cli.add_command(run_command)
cli.add_command(score_command)
cli.add_command(report_command)
cli.add_command(curve_command)
cli.add_command(check_command)
cli.add_command(leaderboard_command)
cli.add_command(export)
cli.add_command(calibrate_gate_command)
cli.add_command(demo)
cli.add_command(bench)
cli.add_command(serve_duplex_command)
bench.add_command(bench_duplex_command)
bench.add_command(bench_cluster_command)


def main() -> None:
    """Entry point of the ``pmc`` script."""
    cli()


__all__ = ["cli", "main"]
