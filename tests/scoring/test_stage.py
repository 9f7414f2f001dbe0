"""The scoring stage on a real run of the reference systems.

Their defining values, resume, idempotence, and failed rollouts as outcomes.
"""

import multiprocessing
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from pmc.gate import OnsetRule
from pmc.harness import SCORES_DIR, ProtocolParams, RunSettings, run_rollouts, runs_dir
from pmc.points import PointKind, read_points
from pmc.scoring import (
    WORDS_ENV,
    WORKER_ENV,
    PauseOutcome,
    Score,
    ScoreSettings,
    ScoreStatus,
    close_scoring_pool,
    read_scores,
    run_scoring,
)
from pmc.systems import Family, SystemCard, bundled_cards, find_card
from pmc.testing.points import write_points
from pmc.testing.systems import ScriptedSystem

SYSTEMS = bundled_cards()
SILENT = "never-speak"
NAMES = (SILENT, "always-speak", "person", "shuffled-person")
FAST = ScoreSettings(asr="faster-whisper:tiny.en")
CAP_S = 12.0
"""The run's cap on a reply: past the person's replies (they end 2.4 s after the boundary) and
the 8 s a silent system is given, so always-speak still runs to it, and each scoring here
transcribes 12 s of its monologue per point instead of the paper's 30 s."""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workdir = tmp_path_factory.mktemp("scored")
    write_points(workdir)
    cards = [find_card(n, SYSTEMS) for n in NAMES]
    run_rollouts(workdir, cards, RunSettings("r", params=ProtocolParams(cap_s=CAP_S)))
    path = runs_dir(workdir) / "r"
    # Its words kept in a folder of its own, for the test that reads them from another pool.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(WORDS_ENV, str(workdir / "words"))
        run_scoring(path, FAST, workers=1)
    return path


def by_kind(run: Path, system: str, kind: PointKind) -> list[Score]:
    return [s for s in read_scores(run, system) if s.kind is kind]


def test_never_speak_is_silent_and_says_nothing(run: Path) -> None:
    scores = read_scores(run, "never-speak")
    assert {s.status for s in scores} == {ScoreStatus.NO_AUDIO}
    assert all(s.pause is None and s.reply is None for s in scores)


def test_always_speak_takes_every_pause_and_runs_to_the_cap(run: Path) -> None:
    (pause,) = by_kind(run, "always-speak", PointKind.PAUSE)
    assert pause.pause is not None
    assert pause.pause.outcome is PauseOutcome.TAKEOVER
    assert pause.pause.under_way and pause.pause.latency_s == 0.0
    ends = by_kind(run, "always-speak", PointKind.TURN_END)
    assert len(ends) == 2
    for s in ends:
        assert s.reply is not None
        assert s.reply.censored
        assert s.reply.latency_s is not None and s.reply.latency_s <= 0


def test_the_person_holds_replies_on_time_and_matches_its_own_words(run: Path) -> None:
    (pause,) = by_kind(run, "person", PointKind.PAUSE)
    assert pause.status is ScoreStatus.NO_AUDIO  # the person held the pause: no audio at all
    ends = by_kind(run, "person", PointKind.TURN_END)
    assert len(ends) == 2
    for s in ends:
        reply = s.reply
        assert reply is not None and reply.latency_s is not None
        # The reply starts 0.4 s after the turn's audio ends; the voice's lead-in and the turn's
        # own trailing silence move the gated onset by tens of milliseconds.
        assert reply.latency_s == pytest.approx(0.4, abs=0.15)
        assert reply.duration_ratio == pytest.approx(1.0, abs=0.15)
        assert reply.token_f1 is not None and reply.token_f1 >= 0.8
        assert reply.cosine is not None and reply.cosine >= 0.9
        assert not reply.censored
    (recall,) = by_kind(run, "person", PointKind.FACT_RECALL)
    assert recall.recall is not None and recall.recall.strict.correct


def test_the_shuffled_person_sits_near_the_similarity_floor(run: Path) -> None:
    ends = by_kind(run, "shuffled-person", PointKind.TURN_END)
    assert len(ends) == 2
    for s in ends:
        assert s.reply is not None and s.reply.token_f1 is not None and s.reply.cosine is not None
        assert s.reply.token_f1 < 0.5
        assert s.reply.cosine < 0.6
    (recall,) = by_kind(run, "never-speak", PointKind.FACT_RECALL)
    assert recall.recall is None


def test_scoring_again_keeps_every_score_and_rewrites_identical_files(run: Path) -> None:
    before = {p: p.read_bytes() for p in (run / "scores").rglob("*") if p.is_file()}
    tallies = run_scoring(run, FAST, workers=1)
    assert sum(t.kept for t in tallies.values()) == 16
    assert sum(t.scored for t in tallies.values()) == 0
    shutil.rmtree(run / "scores")
    run_scoring(run, FAST, workers=2)  # from nothing, in worker processes
    after = {p: p.read_bytes() for p in (run / "scores").rglob("*") if p.is_file()}
    assert after == before


def test_a_second_pass_with_the_same_recogniser_keeps_its_workers(
    run: Path, tmp_path: Path
) -> None:
    """Workers load Whisper and the embedder once per program, not once per pass.

    Each runs in the scoring workers' environment (one thread, glibc's allocator keeping what
    it freed), whatever the environment of the program that started it.
    """
    shutil.copytree(run.parent.parent, tmp_path / "w")
    copy = tmp_path / "w" / run.relative_to(run.parent.parent)
    made = {p.relative_to(run): p.read_bytes() for p in (run / "scores").rglob("*") if p.is_file()}

    def children() -> set[int]:
        return {p.pid for p in multiprocessing.active_children() if p.pid is not None}

    close_scoring_pool()
    others = children()
    passes = []
    for _ in range(2):
        shutil.rmtree(copy / "scores")
        run_scoring(copy, FAST, workers=2)
        passes.append(children() - others)
        found = (copy / "scores").rglob("*")
        again = {p.relative_to(copy): p.read_bytes() for p in found if p.is_file()}
        assert {k: v for k, v in again.items() if k in made} == made and again.keys() == made.keys()
    assert len(passes[0]) == 2 and passes[1] == passes[0]
    for pid in passes[0]:
        lines = Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0")
        environ = dict(line.split("=", 1) for line in lines if "=" in line)
        assert {key: environ.get(key) for key in WORKER_ENV} == WORKER_ENV
    close_scoring_pool()
    assert not children() & passes[0]


def test_words_kept_in_a_named_folder_outlive_the_pool_and_serve_the_next(
    run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Programs that name one ``PMC_WORDS_DIR`` recognise each distinct clip once between them.

    The run was scored with its words kept in such a folder; a new pool's workers (as another
    program's would) read every clip's words from it and write none again, and the scores are
    the same bytes.
    """
    words = run.parent.parent / "words"
    kept = {p.name: p.stat().st_mtime_ns for p in words.iterdir()}
    assert kept and all(name.endswith(".json") for name in kept)
    shutil.copytree(run.parent.parent, tmp_path / "w", ignore=shutil.ignore_patterns("words"))
    copy = tmp_path / "w" / run.relative_to(run.parent.parent)
    made = {p.relative_to(run): p.read_bytes() for p in (run / "scores").rglob("*") if p.is_file()}
    monkeypatch.setenv(WORDS_ENV, str(words))
    close_scoring_pool()
    shutil.rmtree(copy / "scores")
    run_scoring(copy, FAST, workers=1)
    close_scoring_pool()
    found = (copy / "scores").rglob("*")
    assert {p.relative_to(copy): p.read_bytes() for p in found if p.is_file()} == made
    assert {p.name: p.stat().st_mtime_ns for p in words.iterdir()} == kept


def test_two_settings_in_turn_keep_both_pools_and_a_third_closes_the_older(
    run: Path, tmp_path: Path
) -> None:
    """A program alternating one and two workers starts each pool once (KEEP_POOLS is 2).

    Only never-speak is scored (nothing to transcribe): the pools are what is tested.
    """
    shutil.copytree(run.parent.parent, tmp_path / "w")
    copy = tmp_path / "w" / run.relative_to(run.parent.parent)

    def children() -> set[int]:
        return {p.pid for p in multiprocessing.active_children() if p.pid is not None}

    close_scoring_pool()
    others = children()
    seen = []
    for workers in (1, 2, 1, 2):
        shutil.rmtree(copy / "scores")
        run_scoring(copy, FAST, workers=workers, systems=[SILENT])
        seen.append(children() - others)
    one, two = seen[0], seen[1] - seen[0]
    assert (len(one), len(two)) == (1, 2)
    assert seen[2] == seen[3] == one | two  # neither pool was started again
    shutil.rmtree(copy / "scores")
    run_scoring(copy, FAST, workers=3, systems=[SILENT])  # a third: the oldest pool goes
    assert not children() & one and two <= children()
    close_scoring_pool()
    assert not children() & (one | two)


def test_scores_made_with_another_onset_rule_are_made_again(run: Path, tmp_path: Path) -> None:
    shutil.copytree(run.parent.parent, tmp_path / "w")
    copy = tmp_path / "w" / run.relative_to(run.parent.parent)
    settings = ScoreSettings.from_dict(FAST.to_dict())
    assert settings.onset is OnsetRule.ENVELOPE  # the default, as recorded
    older = FAST.to_dict()
    del older["onset"]  # scores written before the rule was recorded
    assert ScoreSettings.from_dict(older).onset is OnsetRule.WINDOW
    assert ScoreSettings.from_dict(older).digest() != FAST.digest()
    grid = replace(FAST, onset=OnsetRule.WINDOW)
    tallies = run_scoring(copy, grid, workers=1)
    assert sum(t.kept for t in tallies.values()) == 0
    assert all(s.settings.onset is OnsetRule.WINDOW for s in read_scores(copy, "person"))
    boundary = {p.point_id: p.boundary_stream_s for p in read_points(run.parent.parent)}

    def onsets(folder: Path) -> list[float]:
        ends = by_kind(folder, "person", PointKind.TURN_END)
        return [
            s.reply.latency_s + boundary[s.point_id]
            for s in ends
            if s.reply is not None and s.reply.latency_s is not None
        ]

    on_grid, refined = onsets(copy), onsets(run)
    assert len(on_grid) == len(refined) == 2
    # The paper's onsets lie on the 20 ms window grid of the played track; refined ones need not.
    assert all(abs(t / 0.02 - round(t / 0.02)) < 0.01 for t in on_grid)
    assert on_grid != refined
    assert all(abs(a - b) < 0.02 for a, b in zip(on_grid, refined, strict=True))


def test_a_failed_rollout_is_an_outcome_not_a_zero(tmp_path: Path) -> None:
    write_points(tmp_path)
    card = SystemCard("flaky", "scripted", Family.LOCAL, params={"say": []})
    # Refused once and not retried: a retry waits without its slot, so a second refusal
    # could go to another rollout and leave none failed.
    ScriptedSystem.refuse = 1
    try:
        run_rollouts(tmp_path, [card], RunSettings("f", retries=0))
    finally:
        ScriptedSystem.refuse = 0
    path = runs_dir(tmp_path) / "f"
    run_scoring(path, FAST, workers=1)
    statuses = [s.status for s in read_scores(path, "flaky")]
    assert statuses.count(ScoreStatus.TRANSPORT_ERROR) == 1
    failed = next(s for s in read_scores(path, "flaky") if s.status is ScoreStatus.TRANSPORT_ERROR)
    assert "connection refused" in failed.error
    assert failed.pause is None and failed.reply is None and failed.recall is None


def score_files(scores: Path) -> dict[str, bytes]:
    return {str(p.relative_to(scores)): p.read_bytes() for p in scores.rglob("*") if p.is_file()}


def test_a_score_a_crash_left_half_written_is_made_again_and_its_temporaries_removed(
    run: Path, tmp_path: Path
) -> None:
    expected = score_files(run / SCORES_DIR)
    shutil.copytree(run.parent.parent, tmp_path / "w")
    copy = tmp_path / "w" / run.relative_to(run.parent.parent)
    scores = copy / SCORES_DIR
    # As a kill leaves them: a score killed while being written (only its temporary, half
    # written), and the system's jsonl killed while being assembled.
    end = next(p for p in read_points(copy.parent.parent) if p.kind is PointKind.TURN_END)
    score = scores / "person" / end.point_id / "0.json"
    data = score.read_bytes()
    score.unlink()
    (score.parent / ".0.json.k1ll3d.tmp").write_bytes(data[: len(data) // 2])
    jsonl = scores / "person.jsonl"
    lines = jsonl.read_bytes()
    jsonl.unlink()
    (scores / ".person.jsonl.k1ll3d.tmp").write_bytes(lines[: len(lines) // 2])

    tallies = run_scoring(copy, FAST, workers=1)
    assert (tallies["person"].scored, tallies["person"].kept) == (1, 3)
    assert sum(t.scored for t in tallies.values()) == 1
    assert sorted(scores.rglob(".*.tmp")) == []
    assert score_files(scores) == expected
