"""pmc.table: every table's Markdown and CSV, and the one way a figure is written."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pmc.table import Align, Figure, Table, new_plot, write_png

if TYPE_CHECKING:
    from matplotlib.figure import Figure as Plot

TABLE = Table(
    "k",
    "Title",
    ("name", "n", "value"),
    (("a|b", 3, 0.123456), ("two\nlines", 0, None)),
    "How to read it.",
)


def test_markdown_is_a_titled_section_with_escaped_cells() -> None:
    assert TABLE.markdown() == (
        "## Title\n"
        "\n"
        "| name | n | value |\n"
        "|---|---|---|\n"
        "| a\\|b | 3 | 0.12 |\n"
        "| two lines | 0 | - |\n"
        "\n"
        "How to read it.\n"
    )


def test_an_empty_section_keeps_one_empty_row_but_a_bare_table_does_not() -> None:
    empty = Table("e", "Empty", ("a", "b"), ())
    assert empty.markdown() == "## Empty\n\n| a | b |\n|---|---|\n|  |  |\n"
    assert empty.markdown(heading=False) == "| a | b |\n|---|---|\n"


def test_a_bare_table_spells_out_each_columns_alignment() -> None:
    text = TABLE.markdown(heading=False, align=(Align.DEFAULT, Align.RIGHT, Align.CENTER))
    assert text.splitlines()[:3] == [
        "| name | n | value |",
        "| --- | ---: | :---: |",
        "| a\\|b | 3 | 0.12 |",
    ]
    assert text.endswith("| two lines | 0 | - |\n\nHow to read it.\n")
    with pytest.raises(ValueError, match="alignment"):
        TABLE.markdown(align=(Align.RIGHT,))


def test_csv_keeps_values_unrounded_and_nothing_empty() -> None:
    assert TABLE.csv() == 'name,n,value\na|b,3,0.123456\n"two\nlines",0,\n'


def test_json_rounds_values_to_four_decimals() -> None:
    assert TABLE.to_dict()["rows"] == [["a|b", 3, 0.1235], ["two\nlines", 0, None]]


def test_a_row_must_fit_the_columns() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        Table("k", "t", ("a", "b"), (("only one",),))


def test_a_figure_is_a_titled_image() -> None:
    figure = Figure("f", "A figure", "figures/f.png")
    assert figure.markdown() == "## A figure\n\n![A figure](figures/f.png)\n"


def _png_size(data: bytes) -> tuple[int, int]:
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk follows the signature
    return width, height


def _plot(middle: float) -> Plot:
    plot = new_plot(figsize=(4.0, 3.0), dpi=50)
    plot.subplots().plot([0.0, 1.0, 2.0], [1.0, middle, 1.0])
    return plot


def test_a_png_is_written_atomically_with_bytes_that_depend_only_on_the_drawing(
    tmp_path: Path,
) -> None:
    first, second, other = tmp_path / "a.png", tmp_path / "sub" / "b.png", tmp_path / "c.png"
    write_png(_plot(0.0), first)
    write_png(_plot(0.0), second)
    write_png(_plot(0.5), other)
    data = first.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert data == second.read_bytes()
    assert data != other.read_bytes()
    assert b"Software" not in data and b"matplotlib" not in data
    assert _png_size(data) == (200, 150)  # the figure's own 50 dpi
    files = sorted(p.name for p in tmp_path.rglob("*") if p.is_file())
    assert files == ["a.png", "b.png", "c.png"]  # no temporary file left behind


def test_a_png_takes_the_dpi_it_is_given(tmp_path: Path) -> None:
    write_png(_plot(0.0), tmp_path / "f.png", dpi=110)
    assert _png_size((tmp_path / "f.png").read_bytes()) == (440, 330)
