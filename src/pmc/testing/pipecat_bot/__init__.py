"""A real Pipecat phone bot over Twilio Media Streams, to measure pmc's ``twilio-media-streams``.

``python -m pmc.testing.pipecat_bot --port N --log FILE`` serves Pipecat 1.14's own pipeline on
127.0.0.1 (FastAPI websocket, Twilio serializer, Silero VAD, Smart Turn v3.2, a canned reply in
Piper) and logs, per call, when its turn analyzer ended the caller's turn, when each reply's
first audio left and each ``clear``, on ``time.monotonic_ns()``. :func:`pipecat_bot` runs it as a
child process. Pipecat (the ``pipecat`` extra) is imported only by the child, never here.
"""

from pmc.testing.pipecat_bot._log import BotEvent, BotEventKind, read_log
from pmc.testing.pipecat_bot._process import RunningBot, pipecat_bot
from pmc.testing.pipecat_bot._reply import REPLY_TEXT

__all__ = ["REPLY_TEXT", "BotEvent", "BotEventKind", "RunningBot", "pipecat_bot", "read_log"]
