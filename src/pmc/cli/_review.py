"""``pmc review``: the listening app, the comparison tables, and the demo's truth as a reviewer."""

from __future__ import annotations

import getpass
import re
import signal
import webbrowser
from dataclasses import replace
from pathlib import Path

import click
from rich.table import Table as RichTable

from pmc.cli._ui import command_line, err, next_step, out, warn, workdir_option
from pmc.errors import PmcError
from pmc.points import read_windows
from pmc.review import (
    TRUTH_REVIEWER,
    check_reviewer,
    current_hashes,
    import_truth,
    read_log,
    review_dir,
    review_tables,
    write_comparison,
)
from pmc.review_app import DEFAULT_HOST, DEFAULT_PORT, ReviewServer
from pmc.table import Table, show

DEMO_TRUTH = Path("demo-source", "ground_truth")
"""Where ``pmc corpus import demo`` leaves the demo's ground truth, inside the workdir."""


def _default_reviewer() -> str:
    """The login name, made a valid reviewer name (it names a log file)."""
    try:
        name = getpass.getuser()
    except (KeyError, OSError):
        name = ""
    return re.sub(r"[^A-Za-z0-9_.-]", "-", name).strip("-.")[:64] or "reviewer"


@click.group("review", invoke_without_command=True)
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Working directory with corpus, labels and points (required to serve).",
)
@click.option(
    "--reviewer",
    default=_default_reviewer,
    show_default="your login name",
    help="Whose decisions these are: they go to WORKDIR/review/REVIEWER.jsonl.",
)
@click.option("--host", default=DEFAULT_HOST, show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="Port to listen on (0: any free one).",
)
@click.option(
    "--candidates",
    is_flag=True,
    help="List every window before the draw, not only the drawn points: review them before "
    "`pmc points` draws again.",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the app in your browser.")
@click.pass_context
def review(
    ctx: click.Context,
    workdir: Path | None,
    reviewer: str,
    host: str,
    port: int,
    candidates: bool,
    open_browser: bool,
) -> None:
    """Listen to windows and re-annotate conversations in a local web app.

    Window mode plays each pause and turn-end point's context in stereo (the person left, the
    other speaker right) with both speakers' words and the engine's labels; accept it, or
    reject it with a reason. Conversation mode moves, relabels, adds and deletes labels of a
    whole conversation. Every decision is appended to WORKDIR/review/REVIEWER.jsonl; a
    re-annotation is saved as WORKDIR/review/labels/REVIEWER/CONVERSATION.json in the label
    stage's schema. `pmc points` then leaves out rejected windows. The app listens on
    127.0.0.1 unless --host says otherwise; stop it with Ctrl-C.
    """
    if ctx.invoked_subcommand is not None:
        return
    if workdir is None:
        raise click.UsageError("give --workdir (the working directory to review)")
    server = ReviewServer(workdir, check_reviewer(reviewer), host, port, candidates)
    err.print(
        f"reviewing {len(server.data.windows)} windows and "
        f"{len(server.data.conversations)} conversations of {workdir} as {reviewer!r}; "
        f"open {server.url} (Ctrl-C stops)",
        soft_wrap=True,
        markup=False,
    )
    if open_browser:
        webbrowser.open(server.url)
    # Ctrl-C stops the app even when it was started with SIGINT ignored (`... &` in a shell).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    next_step(
        command_line("pmc", "points", "--workdir", workdir),
        command_line("pmc", "review", "compare", "--workdir", workdir),
        why="draw again without the rejected windows; compare the engine with the reviewers",
    )


@review.command("compare")
@workdir_option
def compare_command(workdir: Path) -> None:
    """The engine against human labels, and reviewers against each other.

    Writes WORKDIR/review/compare/*.md and *.csv: each reviewer's window decisions; the
    engine's turns against each reviewer's re-annotation (the paper's Table 6: matched turns,
    boundaries moved by more than 100 ms, 250 ms and 1 s, turns made backchannels, changed
    share among flagged and unflagged turns); and each pair of reviewers (accept/reject
    agreement and Cohen's kappa, turn boundaries within 100 and 250 ms).
    """
    windows = read_windows(workdir)
    for problem in read_log(workdir).skipped:
        warn(f"{problem}; skipped")
    tables = review_tables(workdir, current_hashes(workdir, windows))
    if not any(t.rows for t in tables):
        raise PmcError(
            f"{review_dir(workdir)}: nothing reviewed yet; run `pmc review --workdir {workdir}` "
            "(or, on the demo, `pmc review import-truth`)"
        )
    for table in tables:
        _print(table)
    written = write_comparison(workdir, tables)
    out.print(f"{len(written)} files in {written[0].parent}", soft_wrap=True)


@review.command("import-truth")
@workdir_option
@click.option(
    "--truth-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help=f"Folder of ground-truth files [default: WORKDIR/{DEMO_TRUTH.as_posix()}].",
)
def import_truth_command(workdir: Path, truth_dir: Path | None) -> None:
    """Load the demo corpus's ground truth as the reviewer 'truth'.

    Its labels become truth's re-annotation of every conversation, and each window gets
    truth's decision (accepted when the scripted pause or turn end is within 250 ms, rejected
    with a reason otherwise), so `pmc review compare` runs end to end offline. Importing
    again adds nothing for windows truth already decided.
    """
    windows = read_windows(workdir)
    current = current_hashes(workdir, windows)
    # Decide on each window's label as it is now, as a person in the app would.
    live = [
        replace(w, label_sha256=current[w.window_id]) for w in windows if w.window_id in current
    ]
    done = import_truth(workdir, truth_dir or workdir / DEMO_TRUTH, live)
    for problem in done.skipped:
        warn(f"{problem}; skipped")
    out.print(
        f"{TRUTH_REVIEWER}: labels of {len(done.conversations)} conversations; "
        f"{done.decided} window decisions added ({done.already} already there)",
        soft_wrap=True,
    )
    next_step(
        command_line("pmc", "review", "compare", "--workdir", workdir),
        why="the engine against the truth (the paper's Table 6)",
    )


def _print(table: Table) -> None:
    shown = RichTable(title=table.title, title_justify="left")
    for column in table.columns:
        shown.add_column(column)
    for row in table.rows:
        shown.add_row(*(show(c) for c in row))
    out.print(shown)
