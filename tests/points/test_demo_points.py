"""The points stage on the bundled demo: counts, determinism, and every cut against its point."""

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner

from pmc import audio
from pmc.cli import cli
from pmc.corpus import read_corpus
from pmc.gate import OnsetRule, speech_intervals
from pmc.points import Point, PointKind, read_points
from pmc.points._cuts import FRAME, HISTORY_CAP_S
from pmc.points._prompts import leaks_answer


@pytest.fixture(scope="module")
def points_workdir(demo_points_workdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the demo points: the rerun below writes there, and the original is shared."""
    workdir = tmp_path_factory.mktemp("demo-points") / "w"
    shutil.copytree(demo_points_workdir, workdir)
    return workdir


def _checksums(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _read(path: Path) -> np.ndarray:
    data, rate = sf.read(path, dtype="float32")
    assert rate == audio.SAMPLE_RATE
    return np.asarray(data)


@pytest.mark.slow
def test_demo_point_counts_and_funnel(points_workdir: Path) -> None:
    points = read_points(points_workdir)
    counts = {kind: sum(p.kind is kind for p in points) for kind in PointKind}
    print(counts)
    assert counts[PointKind.PAUSE] >= 20
    assert counts[PointKind.TURN_END] >= 20
    assert counts[PointKind.CONVERSATION_RECALL] >= 8
    assert counts[PointKind.FACT_RECALL] >= 8
    # Issue 31: the demo's scripted barge-ins and mid-reply backchannels give 20 of each.
    assert counts[PointKind.BARGE_IN] >= 20
    assert counts[PointKind.BACKCHANNEL] >= 20
    funnel = json.loads((points_workdir / "points" / "funnel.json").read_text())
    assert funnel["judge"].startswith("none")
    for kind in ("pause", "turn_end", "barge_in", "backchannel"):
        stages = funnel["kinds"][kind]
        assert stages["candidates"] >= stages["label_filters"] >= stages["audio_filters"]
        assert (
            stages["audio_filters"]
            >= stages["capped"]
            >= stages["drawn"]
            == counts[PointKind(kind)]
        )
    per_conversation: dict[tuple[str, PointKind], int] = {}
    for p in points:
        key = (p.conversation_id, p.kind)
        per_conversation[key] = per_conversation.get(key, 0) + 1
    capped = [n for (_, k), n in per_conversation.items() if k is PointKind.PAUSE or k.replies]
    assert max(capped) <= 3


@pytest.mark.slow
def test_rerun_gives_identical_manifest_and_cuts(points_workdir: Path) -> None:
    before = _checksums(points_workdir / "points")
    result = CliRunner().invoke(cli, ["points", "--workdir", str(points_workdir)])
    assert result.exit_code == 0, result.output
    assert "Curation funnel" in result.output
    assert _checksums(points_workdir / "points") == before


@pytest.mark.slow
def test_every_cut_sits_where_its_point_says(points_workdir: Path) -> None:
    conversations = {c.conversation_id: c for c in read_corpus(points_workdir)}
    tracks = {
        cid: {s.channel: audio.read(s.audio) for s in c.speakers}
        for cid, c in conversations.items()
    }
    folder = points_workdir / "points"
    points = read_points(points_workdir)
    assert len(points) >= 56  # the counts test's floors: every kind is checked
    for p in points:
        _check_point(p, tracks[p.conversation_id], folder)


def _check_point(p: Point, tracks: dict, folder: Path) -> None:  # type: ignore[type-arg]
    sr = audio.SAMPLE_RATE
    start = round(p.stream_start_conv_s * sr)
    assert start / sr == p.stream_start_conv_s  # the stream starts on a sample
    history_user = _read(folder / p.cuts["history_user"])
    history_system = _read(folder / p.cuts["history_system"])
    live = _read(folder / p.cuts["live"])
    for cut in (history_user, history_system, live):
        assert len(cut) % FRAME == 0
    # History ends exactly where the stream starts: nothing from after the point.
    assert len(history_user) == len(history_system) == start - round(p.history_start_conv_s * sr)
    assert p.history_start_conv_s >= p.stream_start_conv_s - HISTORY_CAP_S - FRAME / sr
    first = round(p.history_start_conv_s * sr)
    lo = max(first, 0)
    np.testing.assert_allclose(history_user[lo - first :], tracks[p.user][lo:start], atol=1 / 32767)
    np.testing.assert_allclose(
        history_system[lo - first :], tracks[p.system][lo:start], atol=1 / 32767
    )
    assert p.stream_start_conv_s <= p.boundary_conv_s
    messages = json.loads((folder / p.cuts["history_text"]).read_text())["messages"]
    assert all(m["end_conv_s"] <= p.stream_start_conv_s for m in messages)
    if p.kind is PointKind.PAUSE or p.kind.replies:
        end = round(p.stream_end_conv_s * sr)
        np.testing.assert_allclose(live[: end - start], tracks[p.user][start:end], atol=1 / 32767)
        assert not live[end - start :].any()  # padding to a whole frame is silence
        assert p.boundary_stream_s == pytest.approx(p.boundary_conv_s - p.stream_start_conv_s)
        assert p.boundary_end_stream_s == pytest.approx(
            p.boundary_end_conv_s - p.stream_start_conv_s
        )
    if p.kind is PointKind.PAUSE:
        # The stream goes through the speaker's resumption, at most 5 s after the pause.
        assert p.boundary_end_conv_s < p.stream_end_conv_s <= p.boundary_end_conv_s + 5.0
        assert p.boundary_end_conv_s - p.boundary_conv_s >= 0.6
    if p.kind.replies:
        assert p.stream_end_conv_s == pytest.approx(p.boundary_conv_s, abs=1 / sr)
        assert p.reply_start_conv_s is not None and p.reply_end_conv_s is not None
        reply = _read(folder / p.cuts["reply"])
        r0, r1 = round(p.reply_start_conv_s * sr), round(p.reply_end_conv_s * sr)
        np.testing.assert_allclose(reply[: r1 - r0], tracks[p.system][r0:r1], atol=1 / 32767)
        assert len(p.reply_text.split()) >= (2 if p.kind.talks_over else 5)
    if p.kind.talks_over:
        _check_clip(p, tracks, folder)
    if p.kind in (PointKind.CONVERSATION_RECALL, PointKind.FACT_RECALL):
        assert (p.user, p.system) == ("B", "A")
        assert p.question and p.gold_answer
        assert p.cuts["question"] == p.cuts["live"]
        assert p.prefix_s is not None and p.stream_start_conv_s <= p.prefix_s
        assert p.boundary_stream_s == pytest.approx(len(live) / sr)
        assert np.sqrt(np.mean(live**2)) > 0.01  # the question is spoken
    assert p.identity_prompt
    assert not leaks_answer(p.identity_prompt, [p.gold_answer] if p.gold_answer else [])


def _check_clip(p: Point, tracks: dict, folder: Path) -> None:  # type: ignore[type-arg]
    """A talk-over point's clip: the person's own channel, from where they came over the reply."""
    sr = audio.SAMPLE_RATE
    assert p.reply_start_conv_s is not None and p.reply_end_conv_s is not None
    assert p.inject_offset_s is not None and p.inject_conv_s is not None
    onset = p.inject_conv_s
    assert p.reply_start_conv_s + 0.5 <= onset < p.reply_end_conv_s  # rule 5's least offset
    # The offset runs from the reply's onset as the gate finds it on the replayed reply.
    reply = _read(folder / p.cuts["reply"])
    at = round((p.reply_start_conv_s - p.stream_start_conv_s) * sr)
    placed = np.concatenate([np.zeros(at, dtype=np.float32), reply])
    gated = speech_intervals(placed, onset=OnsetRule.ENVELOPE)
    first = next(i.start_s for i in gated if i.start_s >= p.boundary_stream_s)
    assert p.inject_offset_s == pytest.approx(onset - p.stream_start_conv_s - first, abs=1e-4)
    clip = _read(folder / p.cuts["inject"])
    assert len(clip) % FRAME == 0
    c0 = round(onset * sr)
    # All but the last frame, which may be padding (the clip is cut to whole frames).
    n = min(len(clip) - FRAME, len(tracks[p.user]) - c0)
    np.testing.assert_allclose(clip[:n], tracks[p.user][c0 : c0 + n], atol=1 / 32767, rtol=0)
    assert np.sqrt(np.mean(clip**2)) > 0.005 and p.inject_text
    # The person's own stop is where the gate ends its talk on the replayed reply (to the
    # sample: the reference run checks it), so never after the reply's cut ends.
    cut_end = p.reply_end_conv_s - onset + 0.001
    if p.kind is PointKind.BARGE_IN:
        assert p.person_yield_s is not None and 0 < p.person_yield_s <= cut_end
        assert p.person_talk_over_s is not None and p.person_kept_talking_s is None
        assert p.person_talk_over_s <= p.person_yield_s
    else:
        assert p.person_kept_talking_s is not None and 0 < p.person_kept_talking_s <= cut_end
        assert p.person_yield_s is None
    assert p.person_next_text  # what the person said after the clip
