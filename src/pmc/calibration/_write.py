"""The calibration on disk: ``gate.json``; ``gate.md`` and ``gate.csv`` through :class:`Table`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pmc import io
from pmc.calibration._result import Calibration, CalibrationRow
from pmc.calibration._tracks import calibration_dir
from pmc.gate import OnsetRule
from pmc.table import Align, Table

TABLE_COLUMNS = (
    "open",
    "release",
    "min (ms)",
    "matched",
    "missed",
    "false onsets",
    "median abs error (ms)",
    "p90 abs error (ms)",
    "mean abs error (ms)",
    "median bias (ms)",
    "",
)
"""Headings of the calibration table: the gate's settings, then how it did; the last column
marks the default gate."""

CSV_COLUMNS = (
    "open_rms",
    "release_ratio",
    "min_s",
    "bridge_s",
    "window_s",
    "utterances",
    "matched",
    "missed",
    "false_onsets",
    "median_abs_onset_ms",
    "p90_abs_onset_ms",
    "mean_abs_onset_ms",
    "median_onset_bias_ms",
    "design",
)
"""Columns of ``gate.csv``: the gate's fields, then the row's, unrounded."""


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def row_cells(row: CalibrationRow) -> list[str]:
    """A row as the table's cells (:data:`TABLE_COLUMNS`); the last marks the default gate."""
    return [
        f"{row.gate.open_rms:g}",
        f"{row.gate.release_ratio:g}",
        f"{row.gate.min_s * 1000:g}",
        f"{row.matched}/{row.utterances}",
        str(row.missed),
        str(row.false_onsets),
        _cell(row.median_abs_onset_ms),
        _cell(row.p90_abs_onset_ms),
        _cell(row.mean_abs_onset_ms),
        _cell(row.median_onset_bias_ms),
        "DESIGN" if row.design else "",
    ]


ONSET_WORDS = {
    OnsetRule.ENVELOPE: "the first sample of its speech (onset rule envelope, as scores place it)",
    OnsetRule.WINDOW: "the start of its first 20 ms window (onset rule window, as the paper did)",
}
"""How ``gate.md`` says where a gate onset was placed."""


def _summary(cal: Calibration) -> str:
    s = cal.settings
    return (
        f"{cal.tracks} tracks of {', '.join(cal.systems)}; {cal.utterances} reference "
        f"utterances; labelled speech {cal.speech_s:.1f} s, silence {cal.silence_s:.1f} s, "
        f"ambiguous {cal.ambiguous_s:.1f} s. Labeller: {s.asr}, {s.window_s:g} s windows at a "
        f"{s.hop_s:g} s hop, peak {s.peak:g}, no-speech <= {s.no_speech_threshold:g}, "
        f"log-probability >= {s.log_prob_threshold:g}, compression <= "
        f"{s.compression_ratio_threshold:g}. Onset error = gate onset - reference onset; a gate "
        f"onset is {ONSET_WORDS[cal.onset]}."
    )


def sweep_table(cal: Calibration) -> Table:
    """The sweep as people read it (``gate.md``'s table)."""
    return Table(
        key="gate",
        title=f"Gate calibration of {cal.run_id}",
        columns=TABLE_COLUMNS,
        rows=tuple(tuple(row_cells(r)) for r in cal.rows),
    )


def values_table(cal: Calibration) -> Table:
    """One row of plain values per gate setting (``gate.csv``)."""
    rows = []
    for r in cal.rows:
        flat: dict[str, Any] = {**r.gate.to_dict(), **r.to_dict()}
        rows.append(tuple(flat[name] for name in CSV_COLUMNS))
    return Table(
        key="gate",
        title=f"Gate calibration of {cal.run_id}",
        columns=CSV_COLUMNS,
        rows=tuple(rows),
    )


def calibration_markdown(cal: Calibration) -> str:
    """The sweep as a Markdown table, under a line saying what it was computed on."""
    table = sweep_table(cal)
    right = (Align.RIGHT,) * len(table.columns)
    return f"# {table.title}\n\n{_summary(cal)}\n\n" + table.markdown(heading=False, align=right)


def calibration_csv(cal: Calibration) -> str:
    """One CSV row per gate setting."""
    return values_table(cal).csv()


def write_calibration(run_dir: Path, cal: Calibration) -> list[Path]:
    """Write ``gate.json``, ``gate.md`` and ``gate.csv`` into the run's calibration folder."""
    folder = calibration_dir(run_dir)
    paths = [folder / "gate.json", folder / "gate.md", folder / "gate.csv"]
    io.write_json(paths[0], cal.to_dict())
    io.write_text(paths[1], calibration_markdown(cal))
    io.write_text(paths[2], calibration_csv(cal))
    return paths
