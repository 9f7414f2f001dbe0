"""``pmc run``: stream every point to each system in real time and record what it did."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from pmc.cli._ui import (
    command_line,
    err,
    next_step,
    out,
    progress_bar,
    ray_option,
    systems_dir_option,
    warn,
    workdir_option,
)
from pmc.conditions import parse_conditions
from pmc.harness import (
    ClockKind,
    HistorySource,
    ProtocolParams,
    RunSettings,
    SystemTally,
    default_run_id,
    run_rollouts,
    runs_dir,
)
from pmc.systems import SystemCard, find_cards


def load_cards(names: tuple[str, ...], folder: Path | None) -> list[SystemCard]:
    """The cards named (bundled, in ``folder``, or by path); ``all`` means every one.

    A card of ``folder`` that replaces a bundled one is used with a warning on the terminal.
    """
    return find_cards(names, folder, warn)


@click.command("run")
@workdir_option
@click.option(
    "--system",
    "systems",
    multiple=True,
    required=True,
    metavar="CARD",
    help="A system card: a bundled card's name ('pmc systems list'), a name in --systems-dir, "
    "or a path to a .toml. Repeat it for several; 'all' runs every card.",
)
@systems_dir_option
@click.option(
    "--rollouts",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Rollouts per point and system (rollout 0 is the scored one).",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=16,
    show_default=True,
    help="Real-time rollouts in flight at once over all systems; each card caps its own.",
)
@click.option(
    "--run-id",
    help="The run's folder under WORKDIR/runs; by default it is derived from the points, so "
    "rerunning the same command resumes the same run.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="The run's seed.")
@click.option(
    "--clock",
    type=click.Choice([c.value for c in ClockKind]),
    default=ClockKind.AUTO.value,
    show_default=True,
    help="auto: virtual time for local systems (faster than real time, same outcomes), real "
    "time for remote ones.",
)
@click.option(
    "--retries",
    type=click.IntRange(min=0),
    default=2,
    show_default=True,
    help="Extra attempts for a rollout whose connection failed without the server saying the "
    "failure was passing (a refused connection), within --retry-attempts; each waits the same "
    "backoff (more on the next resume).",
)
@click.option(
    "--retry-attempts",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Most attempts of a rollout whose connection failed (the server saying the failure "
    "was passing: rate limited, overloaded, going away, a lost Ray worker); each waits a "
    "backoff that holds no concurrency slot and honours the server's retry-after, and rate "
    "limits step the card's concurrency down.",
)
@click.option(
    "--cap-s",
    type=click.FloatRange(min=1.0),
    default=ProtocolParams.cap_s,
    show_default=True,
    help="Stop every rollout this long after its boundary, whatever the system is doing "
    "(the paper's cap, appendix C; a shorter one makes a quick look cheaper, and a run's "
    "scores say when a reply ran into it).",
)
@click.option(
    "--history",
    type=click.Choice([m.value for m in HistorySource]),
    default=HistorySource.FULL.value,
    show_default=True,
    help="The history every system gets before the live turn: the point's own (full), none "
    "(the live turn alone), or as long a history from another conversation (shuffled, chosen "
    "from --seed). An ablated run gets its own default --run-id; compare it with the full run "
    "by 'pmc report --run FULL --compare ABLATED'.",
)
@click.option(
    "--condition",
    "condition",
    metavar="NAME[:KEY=VALUE...][,NAME...]",
    help="What every system hears the person through: noise (room-10db, car-10db), babble "
    "(babble-10db, babble-0db: other conversations of the points), a phone line (telephone), "
    "its own voice coming back (echo), a network's jitter and loss (network); a parameter "
    "changed as babble-10db:snr_db=5. Seeded by --seed, recorded in run.json; a run "
    "under a condition gets its own default --run-id, to compare with the clean run by "
    "'pmc report --run CLEAN --compare NOISY'. What each does: docs/conditions.md.",
)
@ray_option
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    help="With --ray: streaming processes for cards that ask for no Ray resources (default: "
    "one per CPU of the cluster).",
)
def run_command(
    workdir: Path,
    systems: tuple[str, ...],
    systems_dir: Path | None,
    rollouts: int,
    concurrency: int,
    run_id: str | None,
    seed: int,
    clock: str,
    retries: int,
    retry_attempts: int,
    cap_s: float,
    history: str,
    condition: str | None,
    ray_address: str | None,
    workers: int | None,
) -> None:
    """Run systems at every point, in real time, and record what they say and when.

    Each rollout preloads the history, streams the live audio in real-time frames and records
    every message with its receipt time. Writes WORKDIR/runs/RUN_ID/run.json and
    rollouts/SYSTEM/POINT/K/ (trace.json, played.flac, output.wav). Rerunning the same command
    keeps finished rollouts and retries failed ones. With --ray the rollouts stream on Ray
    workers and this process writes them: the run folder is the same.
    """
    cards = load_cards(systems, systems_dir)
    conditions = parse_conditions(condition or "", seed)
    settings = RunSettings(
        run_id=run_id or default_run_id(workdir, HistorySource(history), conditions),
        rollouts=rollouts,
        seed=seed,
        concurrency=concurrency,
        clock=ClockKind(clock),
        retries=retries,
        retry_attempts=retry_attempts,
        params=ProtocolParams(cap_s=cap_s),
        ray=ray_address,
        workers=workers,
        history=HistorySource(history),
        conditions=conditions,
    )
    with progress_bar(f"rollouts of {len(cards)} system(s)") as start:
        tallies = run_rollouts(workdir, cards, settings, start)
    show_rollouts(workdir, settings.run_id, tallies)


def show_rollouts(workdir: Path, run_id: str, tallies: dict[str, SystemTally]) -> None:
    """Each system's tally, where the run is, failures to retry, and the next step."""
    print_tallies(run_id, tallies)
    run_dir = runs_dir(workdir) / run_id
    out.print(f"run in {run_dir}", soft_wrap=True)
    failed = sum(t.failed for t in tallies.values())
    if failed:
        err.print(f"{failed} rollout(s) failed; rerun the same command to retry them")
    next_step(command_line("pmc", "score", "--run", run_dir), why="transcribe and score it")


def print_tallies(run_id: str, tallies: dict[str, SystemTally]) -> None:
    """Per-system counts, the causes of failures, and what the servers did on the way."""
    table = Table(title=f"Rollouts of {run_id}", title_justify="left")
    for name in ("system", "done now", "kept", "failed", "late input"):
        table.add_column(name, justify="left" if name == "system" else "right")
    for system, t in tallies.items():
        table.add_row(system, str(t.done), str(t.kept), str(t.failed), str(t.late))
    out.print(table)
    for system, t in tallies.items():
        for cause, count in sorted(t.causes.items()):
            err.print(f"{system}: {count} x {cause}", soft_wrap=True)
    for system, t in tallies.items():
        if t.unheard:
            err.print(
                f"{system}: not put at {t.unheard} talk-over point(s): its adapter does not "
                "hear the person while the system speaks",
                soft_wrap=True,
            )
    for system, t in tallies.items():
        for line in observations(system, t):
            err.print(line, soft_wrap=True, markup=False)


def observations(system: str, tally: SystemTally) -> list[str]:
    """What the server did besides answering: lines for the user, none for a clean run."""
    lines = []
    if tally.lowest_concurrency < tally.concurrency:
        lines.append(
            f"{system}: the server refused sessions; concurrency stepped down to "
            f"{tally.lowest_concurrency} of {tally.concurrency}"
        )
    if tally.retry_reasons:
        reasons = ", ".join(f"{r} x{n}" for r, n in sorted(tally.retry_reasons.items()))
        lines.append(
            f"{system}: {tally.retried} attempt(s) retried after passing failures ({reasons}), "
            f"{tally.waited_s:.1f} s waited"
        )
    for kind in ("event", "field"):
        names = {
            name.removeprefix(f"{kind} "): n
            for name, n in sorted(tally.unknown.items())
            if name.startswith(f"{kind} ")
        }
        if names:
            listed = ", ".join(f"{name} x{n}" for name, n in names.items())
            lines.append(
                f"{system}: the API sent {sum(names.values())} {kind}(s) pmc does not know: "
                f"{listed}"
            )
    return lines
