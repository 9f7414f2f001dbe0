"""``pmc serve-duplex``: our server for moshi-family full-duplex models (Moshi, PersonaPlex).

The server needs PyTorch and moshi, which live in their own environment (``make duplex-env``:
moshi pins an old PyTorch). This command runs the server in-process where they are importable;
otherwise it runs it with the duplex environment's Python (``.venv-duplex``, or
``PMC_DUPLEX_PYTHON``); with neither it prints how to install them, in one line. Its options
are :mod:`pmc.duplex_server.__main__`'s (``pmc serve-duplex serve --help``). With ``--ray`` it
serves the model as a pool of replicas on a Ray cluster instead
(:func:`pmc.duplex_server.serve_pool`).
"""

from __future__ import annotations

import re
import subprocess
import sys

import click

from pmc.cli._ui import ray_option
from pmc.duplex_server import (
    DEFAULT_POOL,
    PoolSpec,
    in_this_python,
    serve_pool,
    server_env,
    server_python,
)
from pmc.errors import PmcError

POOL_NAME = re.compile(r"[A-Za-z0-9_.-]+")
"""A pool's name is the host part of ``pool://NAME/...``: letters, digits, ``_ . -``."""
POOL_HELP = """
Serving a pool of replicas on Ray (docs/scaling.md):
  pmc serve-duplex --ray [ADDRESS] --replicas N [--gpus-per-replica G] [--pool NAME] [options]

  --ray [ADDRESS]       The Ray cluster (HOST:PORT); alone: this machine's, else a new local one.
  --replicas N          Servers, each a Ray actor running one model instance (default 1).
  --gpus-per-replica G  GPUs each replica takes (default 1; 0 serves on CPU).
  --pool NAME           The pool's name (default duplex): a card names it with
                        endpoint = "pool://NAME/api/duplex".
The other options go to every replica's server, which picks its own --host, --port and
--instances. The command prints the endpoints and stays in the foreground; a replica that dies
is replaced; Ctrl-C stops them all.
"""


@click.command(
    "serve-duplex",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    add_help_option=False,
)
@ray_option
@click.option("--replicas", type=click.IntRange(1), help="With --ray: servers in the pool.")
@click.option(
    "--gpus-per-replica", type=click.FloatRange(0), help="With --ray: GPUs each replica takes."
)
@click.option("--pool", help="With --ray: the pool's name, for pool://NAME/... endpoints.")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def serve_duplex_command(
    ray_address: str | None,
    replicas: int | None,
    gpus_per_replica: float | None,
    pool: str | None,
    args: tuple[str, ...],
) -> None:
    """Serve Moshi or PersonaPlex with a teacher-forced preload route (needs PyTorch, moshi).

    Routes: /api/chat (the stock Moshi protocol), /api/duplex (history first, then live),
    /api/stats. Example: pmc serve-duplex --hf-repo kyutai/moshiko-pytorch-bf16 --device cuda.
    `pmc serve-duplex --help` lists every option. With --ray, a pool of replicas on Ray.
    """
    if args[:1] in (("-h",), ("--help",)):
        from pmc.duplex_server.__main__ import build_parser

        # In-process, so it reads like every other command's help (and needs no PyTorch).
        click.echo(build_parser().format_help().replace("usage:", "Usage:", 1), nl=False)
        click.echo(POOL_HELP, nl=False)
        return
    if ray_address is not None:
        _serve_pool(ray_address, replicas or 1, gpus_per_replica, pool or DEFAULT_POOL, args)
        return
    if (replicas, gpus_per_replica, pool) != (None, None, None):
        raise PmcError("--replicas, --gpus-per-replica and --pool serve a pool: add --ray")
    if in_this_python():
        from pmc.duplex_server.__main__ import main

        main(list(args))
        return
    python = server_python()
    sys.exit(subprocess.call([python, "-m", "pmc.duplex_server", *args], env=server_env()))


def _serve_pool(
    address: str, replicas: int, gpus: float | None, pool: str, args: tuple[str, ...]
) -> None:
    """``--ray``: check what the command line asks for, then serve the pool until Ctrl-C."""
    if address != "auto" and ":" not in address:
        raise PmcError(f"--ray {address}: give the cluster as HOST:PORT, or --ray alone")
    if not POOL_NAME.fullmatch(pool):
        raise PmcError(f"--pool {pool}: use letters, digits, '_', '.' and '-' only")
    server_args = list(args)
    if server_args[:1] == ["serve"]:
        server_args = server_args[1:]
    taken = [a for a in server_args if a.split("=", 1)[0] in ("--host", "--port", "--instances")]
    if taken:
        raise PmcError(f"{taken[0]}: with --ray each replica picks its own host, port, instances")
    if server_args and not server_args[0].startswith("-"):
        raise PmcError(f"{server_args[0]}: with --ray the replicas serve; give options only")
    # A GPU each by default: a full-size model fills one (docs/scaling.md).
    spec = PoolSpec(pool, replicas, 1.0 if gpus is None else gpus, tuple(server_args))
    serve_pool(address, spec, click.echo)


@click.command("duplex")
@click.option(
    "--sessions",
    type=click.IntRange(1),
    default=1,
    show_default=True,
    help="Rollouts at once (one server instance each).",
)
@click.option(
    "--live-s", type=float, default=10.0, show_default=True, help="Live audio per rollout."
)
@click.option(
    "--history-s",
    type=float,
    default=30.0,
    show_default=True,
    help="History forced before each rollout.",
)
@click.option(
    "--steps",
    type=click.IntRange(10),
    default=200,
    show_default=True,
    help="Steps timed on the idle server.",
)
def bench_duplex_command(sessions: int, live_s: float, history_s: float, steps: int) -> None:
    """Time the duplex server's 80 ms step and the harness's input lateness while driving it.

    Builds the tiny random-weight models, times STEPS live steps of one instance alone (no
    network), then serves them (`pmc serve-duplex` on CPU) and runs SESSIONS rollouts at once
    through the moshi-preloaded adapter: the preload's prefill time, the harness's input
    lateness per rollout and the server's step times under that load.
    """
    import statistics

    from rich.table import Table

    from pmc.bench import bench_duplex
    from pmc.cli._ui import out

    found = bench_duplex(sessions, live_s, history_s, steps)
    idle, loaded = found.idle_step_ms, found.instances

    def pct(values: list[float], q: float) -> float:
        return values[min(len(values) - 1, int(len(values) * q))]

    table = Table(title="pmc bench duplex (tiny random-weight models, CPU, torch threads 1)")
    for column in ("measure", "mean ms", "p50 ms", "p95/p99 ms", "max ms"):
        table.add_column(column, justify="left" if column == "measure" else "right")
    table.add_row(
        f"server step, idle ({len(idle)} steps)",
        f"{statistics.fmean(idle):.1f}",
        f"{pct(idle, 0.5):.1f}",
        f"{pct(idle, 0.95):.1f}",
        f"{idle[-1]:.1f}",
    )
    for row in loaded:
        if row["steps"]:
            table.add_row(
                f"server step, live, instance {row['instance']} ({row['steps']} steps)",
                f"{row['mean_ms']:.1f}",
                f"{row['p50_ms']:.1f}",
                f"{row['p95_ms']:.1f}",
                f"{row['max_ms']:.1f}",
            )
    for result in found.rollouts:
        audit = result.trace.audit
        primed = [o.detail for o in result.trace.outputs if o.detail.get("type") == "primed"]
        prefill = f", prefill {primed[0]['elapsed_s']:.2f} s" if primed else ""
        table.add_row(
            f"input lateness, rollout {result.trace.rollout} ({audit.frames} frames{prefill})",
            "",
            f"{audit.lateness_p50_ms:.2f}",
            f"{audit.lateness_p99_ms:.2f}",
            f"{audit.lateness_max_ms:.2f}",
        )
    out.print(table)
    out.print("p95 for server steps, p99 for input lateness; an 80 ms step must stay under 80 ms.")
