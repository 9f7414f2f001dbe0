"""A fake phone agent that speaks Twilio Media Streams, to test pmc's ``twilio-media-streams``.

It plays the agent's side on 127.0.0.1: checks every message the caller (pmc, as Twilio) sends
(``connected``, ``start`` and its media format, 20 ms ``media`` chunks with increasing numbers,
``stop``), ends the caller's turn with an energy endpointer, answers in real words after a set
latency as 40 ms mu-law pieces paced in real time, sends ``clear`` on barge-in and a ``mark``
after each answer, and can refuse, drop the call, send malformed or unknown messages, or hang.
What each call did is in its :class:`CallRecord`, on its stream clock.
"""

from pmc.testing.twilio._agent import AgentBehaviour, AgentCall, CallRecord
from pmc.testing.twilio._server import FakeAgent, FakeAgentThread, fake_agent

__all__ = [
    "AgentBehaviour",
    "AgentCall",
    "CallRecord",
    "FakeAgent",
    "FakeAgentThread",
    "fake_agent",
]
