"""Fakes and builders shipped with the package, so tests (ours and yours) never need the network."""

from pmc.testing.seamless import (
    FakeParticipant,
    participant,
    write_extracted,
    write_raw,
    write_tar,
)

__all__ = ["FakeParticipant", "participant", "write_extracted", "write_raw", "write_tar"]
