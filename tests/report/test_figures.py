"""The report's figures: only those the run has points for, each a PNG written one way."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from pmc.points import PointKind
from pmc.report._figures import DPI, write_figures
from tests.report.test_analyses import data_of, pause_rollout, point, talk


def _size(png: bytes) -> tuple[int, int]:
    width, height = struct.unpack(">II", png[16:24])  # the IHDR chunk follows the signature
    return width, height


# Without turn-end points, panel (c) of the pause figure has no system to put in its legend:
# it draws none, rather than have matplotlib warn of an empty one.
@pytest.mark.filterwarnings("error")
def test_a_run_of_pauses_draws_the_pause_figures_as_deterministic_pngs(tmp_path: Path) -> None:
    points = [point(f"p{i}", PointKind.PAUSE, f"c{i}", 1.0, 1.5) for i in range(6)]
    scores = {
        "taker": [pause_rollout("taker", p, (talk(1.2, 1.4),)) for p in points],
        "waiter": [pause_rollout("waiter", p, (talk(1.8, 2.2),)) for p in points],
    }
    data = data_of(scores, points)
    figures = write_figures(tmp_path / "a", data)
    assert [(f.key, f.file) for f in figures] == [
        ("pauses", "figures/pauses.png"),
        ("takeover_by_pause_duration", "figures/takeover_by_pause_duration.png"),
    ]
    assert "paper Figure 2" in figures[0].title and "paper Figure 7" in figures[1].title
    write_figures(tmp_path / "b", data)
    for figure in figures:
        png = (tmp_path / "a" / figure.file).read_bytes()
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and b"Software" not in png
        assert png == (tmp_path / "b" / figure.file).read_bytes()
    # Two systems: 15 x (0.5 * 2 + 3) inches; the duration figure is 8 x 4; both at DPI.
    assert _size((tmp_path / "a" / figures[0].file).read_bytes()) == (15 * DPI, 4 * DPI)
    assert _size((tmp_path / "a" / figures[1].file).read_bytes()) == (8 * DPI, 4 * DPI)
    written = sorted(p.name for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert written == ["pauses.png", "takeover_by_pause_duration.png"]  # no temporary files
