"""A fake voice agent on two wires, for pmc's ``twilio-media-streams`` and ``pipecat-websocket``.

It plays the agent's side on 127.0.0.1 over Twilio Media Streams or Pipecat's protobuf frames
(:class:`~pmc.testing.pipecat_bot.Wire`): checks every message the caller (pmc) sends (Twilio:
``connected``, ``start`` and its media format, 20 ms ``media`` chunks with increasing numbers,
``stop``; Pipecat: one 16 kHz mono ``AudioRawFrame`` per 20 ms), ends the caller's turn with an
energy endpointer, answers in real words after a set latency as 40 ms pieces paced in real time
(120 ms ahead of playback),
stops itself on barge-in (``clear``, ``InterruptionFrame``), sends a Twilio ``mark`` after each
answer, and can refuse or stall the handshake, drop the call, or send malformed or unknown
messages. What each call did is in its :class:`CallRecord`, on its stream clock.
"""

from pmc.testing.agent._agent import AgentBehaviour, AgentCall, CallRecord
from pmc.testing.agent._server import FakeAgent, FakeAgentThread, fake_agent

__all__ = [
    "AgentBehaviour",
    "AgentCall",
    "CallRecord",
    "FakeAgent",
    "FakeAgentThread",
    "fake_agent",
]
