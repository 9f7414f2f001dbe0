import numpy as np

from pmc.clock import NS_PER_S
from pmc.harness import Chunk, reconstruct

SR = 24_000
T0 = 7 * NS_PER_S


def _chunk(at_s: float, seconds: float, value: float) -> Chunk:
    return Chunk(T0 + round(at_s * NS_PER_S), np.full(round(seconds * SR), value, np.float32))


def test_chunks_play_at_arrival_or_after_the_previous_one_with_gaps_kept() -> None:
    played = reconstruct(
        [_chunk(1.0, 0.5, 0.1), _chunk(1.2, 0.5, 0.2), _chunk(3.0, 0.25, 0.3)], T0, length_s=4.0
    )
    track = played.track
    assert len(track) == 4 * SR
    assert not track[:SR].any()  # silence before the first arrival is kept
    assert np.all(track[SR : round(1.5 * SR)] == np.float32(0.1))
    # The second chunk arrived at 1.2 s but waits for the first: 1.5 to 2.0 s.
    assert np.all(track[round(1.5 * SR) : 2 * SR] == np.float32(0.2))
    assert not track[2 * SR : 3 * SR].any()
    assert np.all(track[3 * SR : round(3.25 * SR)] == np.float32(0.3))
    assert played.backlog_max_ms == 300.0
    assert played.dropped_samples == 0


def test_an_interruption_drops_what_was_not_yet_played() -> None:
    chunks = [_chunk(1.0, 1.0, 0.1), _chunk(1.1, 1.0, 0.2), _chunk(2.5, 0.5, 0.3)]
    played = reconstruct(chunks, T0, interruptions_ns=[T0 + round(1.5 * NS_PER_S)])
    track = played.track
    assert np.all(track[SR : round(1.5 * SR)] == np.float32(0.1))
    assert not track[round(1.5 * SR) : round(2.5 * SR)].any()  # the rest and the queue are gone
    # Audio that arrives after the interruption plays at its arrival.
    assert np.all(track[round(2.5 * SR) : 3 * SR] == np.float32(0.3))
    assert played.dropped_samples == round(0.5 * SR) + SR


def test_a_chunk_that_arrived_just_before_an_interruption_is_cut_by_it() -> None:
    # 8.6 microseconds apart, both in the same 24 kHz sample: the order on the clock decides.
    queued = _chunk(1.0, 0.2, 0.1)
    last = Chunk(T0 + 1_100_000_000, np.full(960, 0.2, np.float32))
    played = reconstruct([queued, last], T0, interruptions_ns=[T0 + 1_100_008_600])
    track = played.track
    assert np.all(track[SR : round(1.1 * SR)] == np.float32(0.1))
    assert not track[round(1.1 * SR) :].any()  # neither the rest nor the last chunk plays
    assert played.dropped_samples == round(0.1 * SR) + 960
