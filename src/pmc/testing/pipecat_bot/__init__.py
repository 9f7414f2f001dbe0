"""A real Pipecat bot, to measure pmc's ``twilio-media-streams`` and ``pipecat-websocket``.

``python -m pmc.testing.pipecat_bot --port N --log FILE`` serves Pipecat 1.14's own pipeline on
127.0.0.1 (FastAPI websocket, Silero VAD, Smart Turn v3.2, a canned reply in Piper) on two
routes: ``/media-stream`` with the Twilio serializer at 8 kHz and ``/ws`` with Pipecat's protobuf
serializer at 16 kHz (:class:`Wire`). It logs, per call, when its turn analyzer ended the
caller's turn, when each reply's first audio left and each interruption (``clear``), on
``time.monotonic_ns()``. :func:`pipecat_bot` runs it as a
child process. Pipecat (the ``pipecat`` extra) is imported only by the child, never here.
"""

from pmc.testing.pipecat_bot._log import BotEvent, BotEventKind, read_log
from pmc.testing.pipecat_bot._process import PATHS, RunningBot, Wire, pipecat_bot
from pmc.testing.pipecat_bot._reply import REPLY_TEXT

__all__ = [
    "PATHS",
    "REPLY_TEXT",
    "BotEvent",
    "BotEventKind",
    "RunningBot",
    "Wire",
    "pipecat_bot",
    "read_log",
]
