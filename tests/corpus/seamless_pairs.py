"""A good and a bad Seamless interaction, two participants each, for the bad-input tests."""

from pmc.testing import FakeParticipant, participant

GOOD = "V00_S0001_I00000001"
BAD = "V00_S0002_I00000002"


def pair(key: str) -> list[FakeParticipant]:
    """The two participants of interaction ``key``, a word each."""
    return [
        participant(f"{key}_P0001", [("hi", 0.5, 0.8)]),
        participant(f"{key}_P0002", [("hey", 1.0, 1.3)]),
    ]
