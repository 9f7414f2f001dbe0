"""``pmc curve``: a local endpointer's trade-off curve, its settings swept by replay."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from pmc.cli._run import load_cards
from pmc.cli._ui import (
    command_line,
    next_step,
    out,
    progress_bar,
    systems_dir_option,
    workdir_option,
)
from pmc.curves import (
    DEFAULT_SILENCE_MS,
    Curve,
    curve_path,
    detector_sweep,
    is_detector,
    sweep,
    write_curve,
)


def _numbers(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a comma-separated list of numbers") from None


@click.command("curve")
@workdir_option
@click.option(
    "--system",
    "system",
    default="endpointer-300",
    show_default=True,
    metavar="CARD",
    help="An endpointer-cascade, pipecat-smart-turn or detector card to sweep (its other "
    "settings are held).",
)
@systems_dir_option
@click.option(
    "--silence-ms",
    default=",".join(f"{ms:g}" for ms in DEFAULT_SILENCE_MS),
    show_default=True,
    help="The silence windows to replay, comma-separated (for Smart Turn: its VAD's stop).",
)
@click.option(
    "--threshold",
    default="",
    help="Silero speech thresholds (for Smart Turn: the model's threshold on its "
    "probability), comma-separated: a curve per threshold (default: the card's own).",
)
@click.option(
    "--eagerness",
    default="",
    help="For a semantic-VAD detector card: the eagerness values to run, comma-separated "
    "(default: low, medium, high and auto).",
)
def curve_command(
    workdir: Path,
    system: str,
    systems_dir: Path | None,
    silence_ms: str,
    threshold: str,
    eagerness: str,
) -> None:
    """Sweep an endpointer's silence window over the pause and turn-end points, deciding only.

    Each point's live audio is heard once by the card's VAD; every setting then replays the
    cascade's endpoints and replies on it without recognising or voicing anything, so twenty
    settings cost about what one run of the card costs. A Smart Turn card sweeps its VAD's stop
    and the model's threshold the same way, the model judging each stretch of speech once. A
    hosted detector card (gpt-realtime-detector, gpt-realtime-semantic-detector,
    gemini-live-detector) runs one session per setting instead and reads where the API itself
    said the speech stopped. Writes WORKDIR/curves/CARD.json and .csv: per setting, the hold
    rate at pauses and the median turn-end decision latency; the report of any run on these
    points draws the curve with the run's own systems on it.
    """
    (card,) = load_cards((system,), systems_dir)
    if is_detector(card):
        with progress_bar(f"{card.name}'s VAD events, a session per setting") as start:
            curve, _ = detector_sweep(
                workdir,
                card,
                _numbers(silence_ms),
                _numbers(threshold),
                start,
                tuple(word.strip() for word in eagerness.split(",") if word.strip()),
            )
        write_curve(workdir, curve)
    else:
        if eagerness:
            raise click.UsageError("--eagerness is for semantic-VAD detector cards only")
        with progress_bar(f"replaying {card.name}'s decisions") as start:
            curve = sweep(workdir, card, _numbers(silence_ms), _numbers(threshold), start)
    show_curve(curve)
    out.print(f"curve: {curve_path(workdir, card.name)}", soft_wrap=True)
    next_step(
        command_line("pmc", "report", "--run", workdir / "runs" / "<run_id>"),
        why="draw it beside a run's systems",
    )


def show_curve(curve: Curve) -> None:
    """The curve as a table: one row per setting."""
    table = Table(title=f"Trade-off curve of {curve.card}", title_justify="left")
    for name in ("setting", "threshold", "hold rate", "decision latency s", "cards"):
        table.add_column(name, justify="left" if name == "cards" else "right")
    for s in curve.settings:
        rate = "-" if s.hold_rate is None else f"{s.hold_rate:.2f} ({s.held}/{s.pauses})"
        latency = "-" if s.decision_latency_s is None else f"{s.decision_latency_s:.3f}"
        threshold = "-" if s.threshold is None else f"{s.threshold:g}"
        table.add_row(s.label, threshold, rate, latency, " ".join(s.cards))
    out.print(table)
    if curve.person_latency_s is not None:
        out.print(f"the person: holds every pause; median gap {curve.person_latency_s:.3f} s")
