"""Check demo scripts while writing them: ``python -m pmc.demo.check FILE...``.

Parses each script and prints what it exercises (pauses, takes, backchannels, overlaps, barge-ins).
With ``--synth`` it also places every word with the synthesiser and reports the length.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pmc.demo._script import Pause, Phrase, parse_script
from pmc.errors import InputError


def main(argv: list[str]) -> int:
    """Check the scripts named in ``argv``; returns a process exit code."""
    synth = "--synth" in argv
    failures = 0
    for name in (a for a in argv if a != "--synth"):
        path = Path(name)
        try:
            script = parse_script(path)
            pauses = [p for t in script.turns for p in t.pieces if isinstance(p, Pause)]
            phrases = [p for t in script.turns for p in t.pieces if isinstance(p, Phrase)]
            words = sum(len(p.words) for p in phrases)
            line = (
                f"{path.name}: {len(script.turns)} turns, {words} words, {len(pauses)} pauses "
                f"({min(p.duration_s for p in pauses):.1f}-{max(p.duration_s for p in pauses):.1f}"
                f" s), {sum(bool(p.take) for p in pauses)} takes, "
                f"{sum(len(p.backchannels) for p in phrases)} backchannels, "
                f"{sum(t.gap_s < 0 for t in script.turns)} overlaps, "
                f"{sum(t.barge_in is not None for t in script.turns)} barge-ins"
            )
            if synth:
                from pmc.demo._build import _synthesize
                from pmc.demo._timeline import GroundTruthKind, build_timeline

                timeline = build_timeline(script, _synthesize, str(path))
                end = max(e.end_conv_s for e in timeline.events if e.kind is GroundTruthKind.TURN)
                fact = next(e for e in timeline.events if e.kind is GroundTruthKind.FACT)
                line += f", {end:.0f} s long, fact at {fact.start_conv_s:.1f} s"
            print(line)
        except InputError as exc:
            failures += 1
            print(f"error: {exc}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
