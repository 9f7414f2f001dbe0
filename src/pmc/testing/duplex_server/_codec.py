"""What the Moshi protocol's Opus codec does to the timing of speech sent through it."""

from __future__ import annotations

from pmc.duplex_server import SAMPLE_RATE

OPUS_DELAY_SAMPLES = 155
"""How much later speech comes out of the Moshi protocol's codec than it went in, at 24 kHz.

Measured (``tests/duplex_server/test_clock.py`` measures it again): the bundled voice (the fakes'
answers, starting sharply) put after digital silence at 1,200 seeded random samples of 80 ms
frames, encoded frame by frame with sphn's ``OpusStreamWriter`` (as a server does) and decoded
page by page with its ``OpusStreamReader`` (as the adapter does). Cross-correlating what went in
with what came out gives 154 or 155 samples every time: libopus's lookahead, 6.5 ms (the
312-sample pre-skip at 48 kHz that an Ogg-Opus stream declares), which sphn's reader does not
remove. Scoring's onset moves by as much at most (156 or 157 samples) and often by less: see
:data:`OPUS_PRE_ECHO_S`."""
OPUS_DELAY_S = OPUS_DELAY_SAMPLES / SAMPLE_RATE
""":data:`OPUS_DELAY_SAMPLES` in seconds (6.46 ms)."""
OPUS_PRE_ECHO_S = 0.006
"""How much earlier than :data:`OPUS_DELAY_S` a decoded onset may be found.

A transform codec spreads its quantisation noise ahead of a sharp attack (pre-echo), and
scoring's refined onset starts where the speech first rose above the gate's holding level
(0.005 RMS over 2 ms), which that noise can reach. In the measurement of
:data:`OPUS_DELAY_SAMPLES` the onset moved by a median of 136 samples ("Right, I see ...") or
150 ("That sounds like ..."), by 34 samples at the least: up to 5.0 ms earlier than the signal.
This allows 6 ms, a millisecond more than was seen."""
OPUS_POST_ECHO_S = 0.018
"""How much later than :data:`OPUS_DELAY_S` a decoded stop may be found.

Speech the fakes stop fades out over its last 2 ms (``FADE_SAMPLES``), and the codec still
spreads what is left of the cut over the samples after it, where scoring's refined end (the
last sample the gate's holding level reaches) can find it. Measured as
:data:`OPUS_DELAY_SAMPLES` was, on the talk-over test's reply cut at 160 seeded samples inside
its speech (where the gate finds the cut itself within 3 ms, before the codec): the decoded end
came up to 14.0 ms after the cut and the codec's delay (a median of 0.0 ms, 8.2 ms at the 95th
percentile). This allows 18 ms, four more than was seen.
``tests/duplex_server/test_clock.py`` measures it again."""
