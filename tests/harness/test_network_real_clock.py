"""On the real clock, a system under the network condition receives what its seed draws.

A fake that stamps each frame as it arrives (``pmc.testing.recorder``) runs a pause and a turn
end on the real clock: no frame reaches it before its deadline plus the delay drawn for it, each
arrives between the harness's own send stamps of it and of the next frame (so the delay was
waited, not just written down), and a lost frame arrives as the last one that came, again.
Marked ``waiting`` (tests/conftest.py): it streams on the real clock.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import pmc.testing.recorder  # noqa: F401 - registers the recording adapter
from pmc import io
from pmc.conditions import Concealment, Network, parse_conditions
from pmc.harness import (
    ClockKind,
    ProtocolParams,
    Run,
    RunSettings,
    condition_seed,
    live_for,
    run_rollouts,
    runs_dir,
)
from pmc.points import MANIFEST_FILE, PointKind
from pmc.systems import Family, SystemCard
from pmc.testing.points import write_points

QUICK = ProtocolParams(no_reply_s=1.5, pause_drain_s=1.0, pause_extra_s=0.5)
"""Short waits after the live stream: the fake never answers."""


def test_each_frame_arrives_after_its_drawn_delay_and_a_lost_one_repeats_the_last(
    tmp_path: Path,
) -> None:
    points = write_points(tmp_path)
    chosen = [
        next(p for p in points if p.kind is kind) for kind in (PointKind.PAUSE, PointKind.TURN_END)
    ]
    with io.atomic_open(tmp_path / "points" / MANIFEST_FILE) as handle:
        for p in chosen:
            handle.write(io.json_line(p.to_dict()))
    record = tmp_path / "received.jsonl"
    card = SystemCard("recorder", "recording", Family.LOCAL, params={"record": str(record)})
    (condition,) = parse_conditions("network:jitter_ms=40:loss=0.1:concealment=repeat", seed=5)
    settings = RunSettings("net", params=QUICK, conditions=(condition,), clock=ClockKind.REAL)
    assert run_rollouts(tmp_path, [card], settings)[card.name].failed == 0

    sessions = [json.loads(line) for line in record.read_text().splitlines()]
    assert len(sessions) == 2
    run = Run(runs_dir(tmp_path) / "net")
    frame_ns = card.frame_samples * 1_000_000_000 // card.sample_rate
    size = card.frame_samples
    lost = delayed = 0
    for point in chosen:
        trace = io.read_json(run.rollout_dir(card.name, point.point_id, 0) / "trace.json")
        sent = [int(s) for _, _, s in trace["inputs"]]
        (got,) = [s for s in sessions if sent[0] <= s["received_ns"][0] <= sent[1]]
        received = got["received_ns"]
        assert len(received) == len(sent)
        seed = condition_seed(condition, point.point_id, 0)
        fates = Network(40.0, 0.1, Concealment.REPEAT, seed).schedule(len(sent), frame_ns)
        t0 = int(trace["t0_ns"])
        for k, fate in enumerate(fates):
            assert received[k] >= t0 + (k + 1) * frame_ns + fate.delay_ns, (point.point_id, k)
            assert sent[k] <= received[k] <= (sent[k + 1] if k + 1 < len(sent) else received[k])
            delayed += fate.delay_ns > 0
        clean = live_for(tmp_path / "points", point)
        frames = [clean[k * size : (k + 1) * size] for k in range(len(clean) // size)]
        last = np.zeros(size, dtype=np.float32)
        for k, fate in enumerate(fates):
            own = frames[k] if k < len(frames) else np.zeros(size, dtype=np.float32)
            expected = last if fate.lost else own
            last = expected
            lost += fate.lost
            assert got["sums"][k] == pytest.approx(
                float(np.sum(expected, dtype=np.float64)), abs=1e-6
            )
            assert got["peaks"][k] == pytest.approx(float(np.max(np.abs(expected))), abs=1e-7)
    assert lost >= 3 and delayed >= 10
