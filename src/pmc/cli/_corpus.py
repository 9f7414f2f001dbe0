"""``pmc corpus``: import a corpus into a working directory and describe it."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from pmc.cli._ui import (
    byte_progress_bar,
    command_line,
    err,
    hours,
    next_step,
    out,
    progress_bar,
    workdir_option,
)
from pmc.corpus import (
    ANY_SEAMLESS_LABEL,
    MIN_DURATION_S,
    SEAMLESS_LABELS,
    Channel,
    CorpusSource,
    FolderSource,
    ImportSummary,
    SeamlessSource,
    Skipped,
    corpus_stats,
    import_corpus,
    read_corpus,
)
from pmc.demo import DEMO_MIN_DURATION_S
from pmc.hub import SEAMLESS_SPLITS, DownloadOutcome, FetchSummary, fetch_seamless
from pmc.pipeline import PipelineHooks, import_demo

_root = click.argument("root", type=click.Path(exists=True, file_okay=False, path_type=Path))
_lenient = click.option(
    "--lenient-words",
    is_flag=True,
    help="Drop words whose end is not after their start, instead of skipping the conversation.",
)


@click.group()
def corpus() -> None:
    """Read a corpus into WORKDIR/corpus/ and describe it."""


@corpus.group("import")
def import_() -> None:
    """Import conversations from a source: seamless, folder or demo."""


@import_.command("seamless")
@_root
@workdir_option
@click.option(
    "--label",
    type=click.Choice([*SEAMLESS_LABELS, ANY_SEAMLESS_LABEL]),
    default="naturalistic",
    show_default=True,
    help="Seamless Interaction subset to keep.",
)
@click.option(
    "--min-duration",
    type=float,
    default=MIN_DURATION_S,
    show_default=True,
    help="Leave out conversations shorter than this many seconds (measured on the audio).",
)
@_lenient
def import_seamless(
    root: Path, workdir: Path, label: str, min_duration: float, lenient_words: bool
) -> None:
    """Import Seamless Interaction from ROOT (extracted folders, WebDataset tars or raw layout)."""
    source = SeamlessSource(root, label=label, lenient_words=lenient_words)
    _run(source, workdir, min_duration)


@import_.command("folder")
@_root
@workdir_option
@click.option(
    "--min-duration",
    type=float,
    default=0.0,
    show_default=True,
    help="Leave out conversations shorter than this many seconds.",
)
@_lenient
def import_folder(root: Path, workdir: Path, min_duration: float, lenient_words: bool) -> None:
    """Import your own corpus from ROOT: a sub-folder per conversation (see the README)."""
    _run(FolderSource(root, lenient_words=lenient_words), workdir, min_duration)


@import_.command("demo")
@workdir_option
@click.option(
    "--min-duration",
    type=float,
    default=DEMO_MIN_DURATION_S,
    show_default=True,
    help="Leave out conversations shorter than this many seconds.",
)
def import_demo_command(workdir: Path, min_duration: float) -> None:
    """Synthesise the bundled demo corpus (offline, cached) and import it.

    The audio, Seamless-format metadata and a ground-truth file per conversation are written to
    WORKDIR/demo-source/; the import then goes through the Seamless reader.
    """
    import_demo_corpus(workdir, min_duration)


def import_demo_corpus(
    workdir: Path, min_duration: float = DEMO_MIN_DURATION_S, conversations: int | None = None
) -> ImportSummary:
    """Build the demo corpus under ``workdir`` and import it (:mod:`pmc.demo`); prints a summary.

    Args:
        workdir: The working directory.
        min_duration: Leave out conversations shorter than this many seconds.
        conversations: Only the first this many of the bundled conversations (all when None).
    """
    hooks = PipelineHooks(progress_bar, report_skip)
    return show_import(import_demo(workdir, conversations, min_duration, hooks), workdir)


def _run(source: CorpusSource, workdir: Path, min_duration: float) -> ImportSummary:
    with progress_bar(f"importing {source.kind.value}") as start:
        summary = import_corpus(
            source, workdir, min_duration_s=min_duration, on_skip=report_skip, progress=start
        )
    return show_import(summary, workdir)


def report_skip(skipped: Skipped) -> None:
    err.print(f"[yellow]skipped[/yellow] {skipped.message}", soft_wrap=True)


def show_import(summary: ImportSummary, workdir: Path) -> ImportSummary:
    """Print the summary and the next step; no conversation read is an error."""
    _print_summary(summary)
    if summary.readable == 0:
        raise click.ClickException("no conversation could be read")
    next_step(
        command_line("pmc", "labels", "--workdir", workdir),
        why="label turns, pauses and turn ends",
    )
    return summary


def _print_summary(summary: ImportSummary) -> None:
    table = Table(title=f"Import from {summary.source.value}", title_justify="left")
    table.add_column("outcome")
    table.add_column("conversations", justify="right")
    table.add_row("imported", str(len(summary.imported)))
    data = summary.to_dict()
    for reason, count in data["filtered"].items():
        table.add_row(f"left out: {reason}", str(count))
    for problem, count in data["skipped_by_problem"].items():
        table.add_row(f"skipped: {problem}", str(count))
    out.print(table)
    dropped = data["words_dropped"]
    if dropped["untimed"] or dropped["end_not_after_start"]:
        out.print(
            f"words dropped: {dropped['untimed']} without times, "
            f"{dropped['end_not_after_start']} with end <= start"
        )


@corpus.command("info")
@workdir_option
@click.option("--per-conversation", is_flag=True, help="Also list every conversation.")
def info(workdir: Path, per_conversation: bool) -> None:
    """Describe the imported corpus: conversations, hours, speech per speaker, words."""
    stats = corpus_stats(read_corpus(workdir))
    table = Table(title=f"Corpus in {workdir}", title_justify="left")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("conversations", str(len(stats.conversations)))
    table.add_row("audio", hours(stats.audio_s))
    table.add_row("speech, speaker A", hours(stats.speech_s(Channel.A)))
    table.add_row("speech, speaker B", hours(stats.speech_s(Channel.B)))
    table.add_row("words", str(stats.words))
    out.print(table)
    if per_conversation:
        rows = Table()
        for name in ("conversation", "audio", "speech A", "speech B", "words"):
            rows.add_column(name, justify="left" if name == "conversation" else "right")
        for c in stats.conversations:
            rows.add_row(
                c.conversation_id,
                hours(c.duration_s),
                hours(c.speech_s[Channel.A]),
                hours(c.speech_s[Channel.B]),
                str(c.words),
            )
        out.print(rows)
    next_step(
        command_line("pmc", "labels", "--workdir", workdir),
        why="label turns, pauses and turn ends",
    )


@corpus.group("fetch")
def fetch() -> None:
    """Download a corpus from where it is published: seamless."""


def _batch_list(ctx: click.Context, param: click.Parameter, value: str | None) -> list[int] | None:
    if value is None:
        return None
    try:
        return [int(b) for b in value.split(",") if b.strip()]
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is not a comma-separated list of batch numbers"
        ) from None


@fetch.command("seamless")
@click.argument("dest", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--label",
    type=click.Choice(SEAMLESS_LABELS),
    default="naturalistic",
    show_default=True,
    help="Seamless Interaction subset.",
)
@click.option(
    "--split", type=click.Choice(SEAMLESS_SPLITS), default="dev", show_default=True, help="Split."
)
@click.option(
    "--conversations",
    type=click.IntRange(min=1),
    default=None,
    help="Whole interactions to fetch, reading archives in order (about 1 GB each) until there "
    "are this many.",
)
@click.option(
    "--batches",
    callback=_batch_list,
    default=None,
    metavar="LIST",
    help="Only these batches, e.g. 0,1; without --conversations, all of them (about 50 GB each).",
)
@click.option(
    "--revision", default="main", show_default=True, help="Branch, tag or commit of the dataset."
)
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Only to write the next command in full.",
)
def fetch_seamless_command(
    dest: Path,
    label: str,
    split: str,
    conversations: int | None,
    batches: list[int] | None,
    revision: str,
    workdir: Path | None,
) -> None:
    """Download whole interactions of Seamless Interaction into DEST from Hugging Face.

    Only the archives the chosen interactions need are downloaded (kept in DEST/.pmc-fetch/,
    resumed if interrupted, checked by sha256), and only their audio and transcripts are
    extracted, for pmc corpus import seamless DEST. HF_ENDPOINT and HF_TOKEN are honoured.
    """
    with byte_progress_bar() as start:
        summary = fetch_seamless(
            dest,
            label=label,
            split=split,
            conversations=conversations,
            batches=batches,
            revision=revision,
            progress=start,
        )
    _print_fetch_summary(summary)
    if not summary.interactions:
        raise click.ClickException("no whole interaction in the archives read")
    words: list[str | Path] = ["pmc", "corpus", "import", "seamless", dest]
    words += ["--workdir", workdir or "WORKDIR"]
    if label != "naturalistic":
        words += ["--label", label]
    next_step(command_line(*words), why="import what was fetched")


def _print_fetch_summary(summary: FetchSummary) -> None:
    table = Table(title=f"Fetch of {summary.label}/{summary.split}", title_justify="left")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("from", f"{summary.repo_id}@{summary.commit[:8]}")
    table.add_row("interactions", str(len(summary.interactions)))
    for outcome in DownloadOutcome:
        table.add_row(f"archives {outcome.value}", str(summary.count(outcome)))
    table.add_row("downloaded", _size(summary.bytes_received))
    table.add_row("archive cache", _size(summary.cache_bytes))
    table.add_row("files extracted", str(summary.files_written))
    if summary.files_removed:
        table.add_row("files removed (no longer chosen)", str(summary.files_removed))
    out.print(table)
    if summary.requested is not None and len(summary.interactions) < summary.requested:
        err.print(
            f"[yellow]only {len(summary.interactions)} whole interaction(s) in the batches read, "
            f"of {summary.requested} asked for[/yellow]",
            soft_wrap=True,
        )


def _size(nbytes: int) -> str:
    """Bytes in the largest unit that keeps the number at or above 1 (decimal units, as the hub)."""
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} B"
