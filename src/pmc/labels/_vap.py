"""Voice-activity projection flags, behind a plug-in interface (paper section 3.2, appendix B).

A projector gives, per speaker and frame, the probability that the speaker holds the floor in
the near future (VAP's ``p_now``, normalised across the two speakers). Two rules use it: a turn
that ended while its speaker was still projected to keep the floor, and a backchannel at which
the floor was projected to pass to the backchanneler. The VAP model itself is not on the package
registries: a projector is a plug-in class, named on the command line as ``module:Class``.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from pmc.corpus import Channel, Conversation
from pmc.errors import PmcError
from pmc.labels._types import Flag, Label, LabelKind, Labels

HOLD_AT_TURN_END = 0.65
"""A turn end is flagged when P(the speaker keeps the floor) >= 0.65 (paper section 3.2)."""
HANDOVER_AT_BACKCHANNEL = 0.60
"""A backchannel is flagged when P(the floor passes to the backchanneler) >= 0.60 (section 3.2)."""


@dataclass(frozen=True)
class Projection:
    """Per speaker, P(this speaker holds the floor) on a frame grid from the conversation start."""

    frame_hz: float
    p_now: dict[Channel, npt.NDArray[np.float64]]

    def at(self, channel: Channel, t_conv_s: float) -> float:
        """The probability at the frame that holds ``t_conv_s`` (clamped to the ends)."""
        values = self.p_now[channel]
        frame = min(max(int(t_conv_s * self.frame_hz), 0), len(values) - 1)
        return float(values[frame])


class Projector(ABC):
    """A model of who will hold the floor next."""

    name: str

    @abstractmethod
    def project(self, conversation: Conversation) -> Projection:
        """Run the model over the conversation's two channels."""


def flag_with_projection(labels: Labels, projection: Projection) -> Labels:
    """Add the two projection flags to turns (and their ends) and backchannels.

    A turn is judged at its end-of-turn offset; a backchannel at its own end, once it was heard.
    """
    held = {
        label.start_conv_s
        for label in labels.labels
        if label.kind is LabelKind.END_OF_TURN
        and label.speaker is not None
        and projection.at(label.speaker, label.start_conv_s) >= HOLD_AT_TURN_END
    }
    out: list[Label] = []
    for label in labels.labels:
        flag: Flag | None = None
        if label.kind in (LabelKind.TURN, LabelKind.END_OF_TURN) and label.end_conv_s in held:
            flag = Flag.VAP_HOLD_AT_TURN_END
        elif (
            label.kind is LabelKind.BACKCHANNEL
            and label.speaker is not None
            and projection.at(label.speaker, label.end_conv_s) >= HANDOVER_AT_BACKCHANNEL
        ):
            flag = Flag.VAP_HANDOVER_AT_BACKCHANNEL
        if flag is not None and flag not in label.flags:
            label = replace(label, flags=(*label.flags, flag))
        out.append(label)
    return replace(labels, labels=tuple(out))


def load_projector(spec: str) -> Projector:
    """Import a projector plug-in named ``package.module:Class`` and build it without arguments."""
    module_name, _, class_name = spec.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise PmcError(f"cannot load projector {spec!r} ({exc})") from None
    projector = cls()
    if not isinstance(projector, Projector):
        raise PmcError(f"{spec} is not a pmc.labels.Projector")
    return projector
