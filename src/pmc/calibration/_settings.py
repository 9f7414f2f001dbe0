"""How played tracks are labelled and which gate settings are swept."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from pmc.asr import DEFAULT_ASR
from pmc.gate import GateParams


@dataclass(frozen=True)
class LabelSettings:
    """How played tracks are labelled; the decoding fields key the cached window decodes.

    Attributes:
        asr: The recogniser, ``faster-whisper:MODEL`` (the bundled ``tiny.en`` by default for
            speed; the reference labelled with Whisper base, ``faster-whisper:base``).
        window_s: Window length (appendix D: 2 s windows).
        hop_s: Window hop (appendix D: at a 1 s hop).
        peak: The peak each window is normalised to before decoding (the reference's 0.5,
            docs/decisions.md section 4).
        no_speech_threshold: A window whose no-speech probability exceeds this says no speech.
        log_prob_threshold: A window whose mean token log-probability is below this is unsure.
        compression_ratio_threshold: A window whose text's gzip ratio exceeds this (Whisper's
            repetition guard) is unsure.
        cell_s: Resolution of the labels; the gate's 20 ms window, which is also the 20 ms
            precision of Whisper's timestamps.
        join_s: Speech stretches closer than this make one utterance: Whisper's word boundaries
            err by 50 to 250 ms (docs/architecture.md "Metrics"), so a shorter gap is no evidence of
            a pause.
    """

    asr: str = DEFAULT_ASR
    window_s: float = 2.0
    hop_s: float = 1.0
    peak: float = 0.5
    # The three checks take faster-whisper 1.2.1's own transcribe() defaults; the reference
    # labeller was stricter on no-speech (0.5) and laxer on log-probability (-1.2).
    no_speech_threshold: float = 0.6
    log_prob_threshold: float = -1.0
    compression_ratio_threshold: float = 2.4
    cell_s: float = GateParams.window_s
    join_s: float = 0.25

    def __post_init__(self) -> None:
        if not self.window_s > 0:
            raise ValueError(f"window_s must be positive, got {self.window_s}")
        if not 0 < self.hop_s <= self.window_s:
            raise ValueError(f"hop_s must be in (0, window_s], got {self.hop_s}")
        if not 0 < self.peak <= 1:
            raise ValueError(f"peak must be in (0, 1], got {self.peak}")
        if not self.cell_s > 0:
            raise ValueError(f"cell_s must be positive, got {self.cell_s}")
        if not self.join_s >= 0:
            raise ValueError(f"join_s must be non-negative, got {self.join_s}")

    def decoding(self) -> dict[str, Any]:
        """What the window decodes depend on; a cached decode with other values is redone."""
        return {
            "asr": self.asr,
            "window_s": self.window_s,
            "hop_s": self.hop_s,
            "peak": self.peak,
            # Fixed, as the reference decoded: greedy at temperature 0, each window on its own.
            "beam_size": 1,
            "temperature": 0.0,
            "condition_on_previous_text": False,
            "language": "en",
        }

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return asdict(self)


@dataclass(frozen=True)
class SweepGrid:
    """The gate settings swept; the bridge and window stay at the default 40 ms and 20 ms.

    Table 8's body is not in our copy of the paper; appendix D's text compares threshold 0.01
    with 0.05 (and an Otsu split at 3.2e-4), release ratio 0.5 with 0.75, and minimum durations
    of 40 and 80 ms. The defaults are the issue's grid (thresholds 0.005 to 0.02, release ratios
    0.3 to 1, minimum durations 40 to 160 ms) with the paper's 0.05 added and its 0.75 in place
    of 0.7, so every value the paper compares has a row.

    Attributes:
        open_rms: Open thresholds.
        release_ratio: Release ratios.
        min_s: Minimum interval durations, in seconds.
    """

    open_rms: tuple[float, ...] = (0.005, 0.0075, 0.01, 0.015, 0.02, 0.05)
    release_ratio: tuple[float, ...] = (0.3, 0.5, 0.75, 1.0)
    min_s: tuple[float, ...] = (0.04, 0.08, 0.16)

    def params(self, base: GateParams | None = None) -> list[GateParams]:
        """Every combination, threshold slowest, over ``base`` (the default gate by default)."""
        base = base or GateParams()
        return [
            replace(base, open_rms=o, release_ratio=r, min_s=m)
            for o in self.open_rms
            for r in self.release_ratio
            for m in self.min_s
        ]

    def to_dict(self) -> dict[str, list[float]]:
        """Plain-JSON form."""
        return {k: list(v) for k, v in asdict(self).items()}
