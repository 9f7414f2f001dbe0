"""A hosted API's trade-off curve from its own VAD events, against the fake's known endpointer."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pmc import io
from pmc.curves import Curve, detector_sweep, is_detector
from pmc.errors import PmcError
from pmc.harness import TRACE_FILE, Run, runs_dir
from pmc.points import PointKind, read_points
from pmc.systems import SystemCard, bundled_cards, find_card
from pmc.testing.hosted import SEMANTIC_TIMEOUT_MS, Dialect
from pmc.testing.points import write_points
from tests.systems.conftest import KEY, endpoint_on, fakes_for, held_off_s, load, session_of

NAME = "gpt-realtime-detector"
WINDOWS_MS = (300.0, 1500.0)
"""Shorter and longer than the test points' 1 s pause."""
WINDOW_S = 0.021
"""The fake's endpointer decides on 20 ms frames: two settings' decisions differ by their
silence windows to within one frame (and a millisecond of rounding)."""


def test_the_bundled_detector_card_never_answers() -> None:
    card = find_card(NAME, bundled_cards())
    assert is_detector(card)
    assert card.turn_detection["create_response"] is False
    assert card.turn_detection["interrupt_response"] is False
    assert not is_detector(find_card("gpt-realtime-300", bundled_cards()))


def test_each_setting_decides_where_the_fake_did_and_nobody_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    points = {p.point_id: p for p in write_points(tmp_path / "w")}
    workdir = tmp_path / "w"
    with fakes_for([NAME], dialects={NAME: Dialect.OPENAI}) as fakes:
        fake = fakes[Dialect.OPENAI]
        card = load(NAME, endpoint_on(NAME, fake.url), tmp_path)
        assert card.api_key_env
        monkeypatch.setenv(card.api_key_env, KEY)
        curve, variants = detector_sweep(workdir, card, WINDOWS_MS)
        run = Run(runs_dir(workdir) / f"curve-{NAME}")
        short, long = curve.settings
        assert (short.silence_ms, long.silence_ms) == WINDOWS_MS
        # The 1 s pause: the 300 ms window decides inside it, the 1.5 s one does not.
        assert (short.pauses, short.held, long.held) == (1, 0, 1)
        assert short.decided == long.decided == short.turn_ends == 2
        for v in variants:
            assert v.point_kinds == ("pause", "turn_end")
            for pid, point in points.items():
                if point.kind not in (PointKind.PAUSE, PointKind.TURN_END):
                    continue
                trace = io.read_json(run.rollout_dir(v.name, pid, 0) / TRACE_FILE)
                record = fake.session(session_of(trace))
                assert record.answers == [] and record.endpointing, (v.name, pid)
                assert not any(o["kind"] == "audio" for o in trace["outputs"]), (v.name, pid)
        # Each median decision is where the fake sent its speech_stopped after the turn end.
        for setting, v in zip(curve.settings, variants, strict=True):
            delays = []
            for pid, point in points.items():
                if point.kind is not PointKind.TURN_END:
                    continue
                trace = io.read_json(run.rollout_dir(v.name, pid, 0) / TRACE_FILE)
                record = fake.session(session_of(trace))
                assert record.origin_ns is not None
                shift = (record.origin_ns - int(trace["t0_ns"])) / 1e9 - point.boundary_stream_s
                sent = [at + shift for change, at in record.speech_sent if change == "stopped"]
                delays.append((min(s for s in sent if s >= 0.0), held_off_s(trace)))
            expected = sorted(d for d, _ in delays)
            median = (expected[0] + expected[1]) / 2
            bound = 0.003 + max(late for _, late in delays)
            assert setting.decision_latency_s is not None
            assert abs(setting.decision_latency_s - median) <= bound, (setting, delays)
        # The windows differ by 1.2 s, and so do the decisions (to the fake's 20 ms window).
        assert long.decision_latency_s is not None and short.decision_latency_s is not None
        difference = long.decision_latency_s - short.decision_latency_s
        assert difference == pytest.approx(1.2, abs=WINDOW_S + _late_s(run, variants, workdir))


def test_a_card_that_answers_is_not_swept_from_events(tmp_path: Path) -> None:
    write_points(tmp_path)
    with pytest.raises(PmcError, match="detector mode"):
        detector_sweep(tmp_path, find_card("gpt-realtime-300", bundled_cards()), (300.0,))


SEMANTIC = "gpt-realtime-semantic-detector"


def test_semantic_eagerness_is_swept_as_words_each_deciding_its_wait_after_the_speech(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fake's semantic VAD waits 2 s at high eagerness and 4 s at medium (its longest)."""
    write_points(tmp_path / "w")
    workdir = tmp_path / "w"
    with fakes_for([SEMANTIC], dialects={SEMANTIC: Dialect.OPENAI}) as fakes:
        fake = fakes[Dialect.OPENAI]
        card = load(SEMANTIC, endpoint_on(SEMANTIC, fake.url), tmp_path)
        assert is_detector(card) and card.api_key_env
        monkeypatch.setenv(card.api_key_env, KEY)
        curve, variants = detector_sweep(workdir, card, (), eagerness=("high", "medium"))
        high, medium = curve.settings
        assert [v.turn_detection["eagerness"] for v in variants] == ["high", "medium"]
        assert [(s.setting, s.silence_ms, s.label) for s in curve.settings] == [
            ("high", None, "high"),
            ("medium", None, "medium"),
        ]
        # Both waits are longer than the test points' 1 s pause: both hold it.
        assert (high.pauses, high.held, medium.held) == (1, 1, 1)
        assert high.decided == medium.decided == 2
        run = Run(runs_dir(workdir) / f"curve-{SEMANTIC}")
        for v in variants:
            for pid in _ends(workdir):
                trace = io.read_json(run.rollout_dir(v.name, pid, 0) / TRACE_FILE)
                record = fake.session(session_of(trace))
                assert record.answers == [], (v.name, pid)
        wait = SEMANTIC_TIMEOUT_MS["medium"] - SEMANTIC_TIMEOUT_MS["high"]
        assert high.decision_latency_s is not None and medium.decision_latency_s is not None
        difference = medium.decision_latency_s - high.decision_latency_s
        late_s = _late_s(run, variants, workdir)
        assert difference == pytest.approx(wait / 1000, abs=WINDOW_S + late_s)
        assert Curve.from_dict(curve.to_dict()) == curve


def test_eagerness_is_refused_where_it_means_nothing(tmp_path: Path) -> None:
    write_points(tmp_path)
    with pytest.raises(PmcError, match="eagerness is semantic_vad's"):
        detector_sweep(tmp_path, find_card(NAME, bundled_cards()), (300.0,), eagerness=("low",))
    with pytest.raises(PmcError, match="not one of low, medium, high, auto"):
        detector_sweep(tmp_path, find_card(SEMANTIC, bundled_cards()), (), eagerness=("eager",))


GEMINI = "gemini-live-detector"


def test_gemini_s_activity_reports_make_its_curve_and_its_answers_are_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gemini answers anyway; its ``voiceActivity`` ACTIVITY_END reports are the decisions."""
    write_points(tmp_path / "w")
    workdir = tmp_path / "w"
    with fakes_for([GEMINI], dialects={GEMINI: Dialect.GEMINI}) as fakes:
        fake = fakes[Dialect.GEMINI]
        bundled = load(GEMINI, endpoint_on(GEMINI, fake.url), tmp_path)
        # The fake counts a start only after prefixPaddingMs of unbroken speech, and the test
        # points' longest stretch at one turn end is 280 ms: with the card's 300 ms it would
        # never start there.
        turns = {**bundled.turn_detection, "prefixPaddingMs": 20}
        card = dataclasses.replace(bundled, turn_detection=turns)
        assert is_detector(card) and card.api_key_env
        assert not is_detector(find_card("gemini-3.1-flash-live", bundled_cards()))
        monkeypatch.setenv(card.api_key_env, KEY)
        curve, variants = detector_sweep(workdir, card, WINDOWS_MS)
        short, long = curve.settings
        assert [v.turn_detection["silenceDurationMs"] for v in variants] == list(WINDOWS_MS)
        assert [(s.silence_ms, s.threshold) for s in curve.settings] == [
            (300.0, None),
            (1500.0, None),
        ]
        assert (short.pauses, short.held, long.held) == (1, 0, 1)
        assert short.decided == long.decided == 2
        run = Run(runs_dir(workdir) / f"curve-{GEMINI}")
        for v in variants:
            for pid in _ends(workdir):
                trace = io.read_json(run.rollout_dir(v.name, pid, 0) / TRACE_FILE)
                record = fake.session(session_of(trace))
                assert record.settings["explicitVadSignal"] is True
                assert record.endpointing and record.answers, (v.name, pid)
                ends = [
                    o["detail"]["voiceActivity"]
                    for o in trace["outputs"]
                    if "voiceActivity" in o["detail"]
                ]
                stopped = [at for change, at in record.speech if change == "stopped"]
                # One report per decision of the fake, each naming where the speech ended.
                assert [
                    e["audioOffset"] for e in ends if e["voiceActivityType"] == "ACTIVITY_END"
                ] == [f"{at:.3f}s" for at in stopped]
        assert long.decision_latency_s is not None and short.decision_latency_s is not None
        difference = long.decision_latency_s - short.decision_latency_s
        assert difference == pytest.approx(1.2, abs=WINDOW_S + _late_s(run, variants, workdir))


def test_gemini_has_only_its_window_to_sweep(tmp_path: Path) -> None:
    write_points(tmp_path)
    card = find_card(GEMINI, bundled_cards())
    with pytest.raises(PmcError, match="silence window only"):
        detector_sweep(tmp_path, card, (300.0,), thresholds=(0.6,))


def _ends(workdir: Path) -> list[str]:
    return [p.point_id for p in read_points(workdir) if p.kind is PointKind.TURN_END]


def _late_s(run: Run, variants: list[SystemCard], workdir: Path) -> float:
    """How much later than the fake decided two settings' decisions may be stamped.

    Each setting's decision is a median over the turn ends, each stamped at most its rollout's
    measured lateness late (:func:`held_off_s`), so a difference between two settings may be
    off by both settings' largest (a loaded fresh run stamped one 60 ms late).
    """
    ends = _ends(workdir)
    traces = [
        [io.read_json(run.rollout_dir(v.name, p, 0) / TRACE_FILE) for p in ends] for v in variants
    ]
    return sum(max(held_off_s(t) for t in setting) for setting in traces)
