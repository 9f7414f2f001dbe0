"""The rule engine's parameters and version, which every labels file records."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

ENGINE_VERSION = 3
"""2: rule 5, barge-ins and backchannels during a reply (docs/labels.md). 3: an offset decided
again at a tie sees every other decision of that instant, whichever speaker it is."""


@dataclass(frozen=True)
class EngineSettings:
    """The engine's parameters; every labels file records them."""

    bridge_s: float = 0.25
    """Gaps up to this inside one speaker's activity are closed (paper section 3.2)."""
    backchannel_max_s: float = 1.0
    """A backchannel lasts at most 1 s (paper section 3.2)."""
    backchannel_max_words: int = 2
    """... and has at most two words (paper section 3.2)."""
    lookahead_s: float = 5.0
    """How far past an offset the engine looks (paper section 3.2)."""
    take_max_s: float = 2.5
    """A failed take lasts at most this. Ours: the paper does not say; a false start of up to five
    words at a conversational 2 to 3 words per second."""
    take_max_words: int = 5
    """... and has at most this many words (ours, as above)."""
    yield_overlap_s: float = 0.5
    """The other yields when they stop within this after the first speaker resumes over them
    (ours: the paper says only "starts and yields")."""
    short_turn_s: float = 0.4
    """A lexical turn shorter than this is flagged (paper section 3.2)."""
    gap_fill_share: float = 0.5
    """A turn with at least this share of gap-fill words is flagged (paper section 3.2)."""
    talk_over_min_offset_s: float = 0.5
    """Talk over a reply counts from this far into it (ours, rule 5): both starting within half
    a second is a simultaneous start, which is resolved differently from talking over someone
    already under way (docs/labels.md)."""
    terminal_overlap_s: float = 0.3
    """A replier who stops within this of a barge-in may have been ending anyway (ours, rule 5:
    about a syllable); the barge-in is flagged for review (docs/labels.md)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return asdict(self)
