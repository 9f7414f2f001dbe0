"""Real conditions: noise, babble, echo, a phone line and a network, as settings of a run.

docs/conditions.md. Each changes what a system hears, never what scoring compares against:
noise, babble and the telephone change whole tracks before streaming (the live stream, the
history a system hears as audio, the person's clip), the echo and the network act on each input
frame as it is sent. A shared helper below the stages: pure functions on audio and a seed.
"""

from pmc.conditions._echo import Echo
from pmc.conditions._network import Delivery, Network, conceal, deliveries
from pmc.conditions._noise import (
    SPEECH_RMS,
    babble,
    coloured_noise,
    mix_at_snr,
    snr_db,
    speech_power,
)
from pmc.conditions._spec import (
    CONDITION_SCHEMA_VERSION,
    PRESETS,
    Concealment,
    Condition,
    ConditionKind,
    NoiseColour,
    parse_conditions,
)
from pmc.conditions._telephone import LINE_RATE, band_limit, telephone

__all__ = [
    "CONDITION_SCHEMA_VERSION",
    "LINE_RATE",
    "PRESETS",
    "SPEECH_RMS",
    "Concealment",
    "Condition",
    "ConditionKind",
    "Delivery",
    "Echo",
    "Network",
    "NoiseColour",
    "babble",
    "band_limit",
    "coloured_noise",
    "conceal",
    "deliveries",
    "mix_at_snr",
    "parse_conditions",
    "snr_db",
    "speech_power",
    "telephone",
]
