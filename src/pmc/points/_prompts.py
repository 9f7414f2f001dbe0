"""Identity prompts: who the system is, one per speaker; offline, a template.

See docs/architecture.md "Protocol".
"""

from __future__ import annotations

from pmc.corpus import Channel

PROMPT_VERSION = "template-1"

TEMPLATE = (
    "You are speaker {me} in a relaxed, unscripted conversation with someone you know (speaker "
    "{them}). The earlier turns marked as the assistant's are your own words in this "
    "conversation. Keep talking as yourself: answer and take turns the way people do, briefly "
    "and naturally."
)
"""The offline default. It names no topic or fact, so it cannot hand a system a recall answer."""


def identity_prompt(system: Channel) -> str:
    """The identity prompt for the speaker the system plays."""
    them = system.other
    return TEMPLATE.format(me=system.value, them=them.value)


def leaks_answer(prompt: str, answers: list[str]) -> bool:
    """Whether a prompt holds every word of some gold answer.

    A written prompt must never hand a system a recall answer; the template never does.
    """
    words = set(prompt.lower().replace(",", " ").replace(".", " ").split())
    return any(
        answer.split() and all(w.lower().strip(".,") in words for w in answer.split())
        for answer in answers
    )
