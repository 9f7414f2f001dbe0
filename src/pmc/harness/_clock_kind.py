"""Which clock rollouts run on: a run's setting, and what each rollout's trace records."""

from __future__ import annotations

from enum import StrEnum


class ClockKind(StrEnum):
    """Which clock rollouts run on."""

    AUTO = "auto"
    """Virtual for local systems (faster than real time, same outcomes), real for the rest."""
    REAL = "real"
    VIRTUAL = "virtual"
