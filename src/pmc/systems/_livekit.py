"""A LiveKit agent, unmodified, as LiveKit's console peer (``--connect-addr``).

LiveKit Agents runs any agent file without a LiveKit server as ``python -m livekit.agents console
AGENT --connect-addr HOST:PORT``: the agent connects out over TCP to a console peer, which plays
the user's microphone and the agent's speaker (docs/wire-formats.md section 11). pmc is that
peer. For each rollout it listens on a loopback port, starts the card's agent command, and once
the agent says it is listening, streams the live audio and then silence in real time. The
agent's own VAD, turn detector and interruption logic decide everything it does; pmc stamps
each of its audio frames on receipt, plays them on its own clock, tells the agent when a
flushed reply has finished playing (as the console's speaker does), and records
``audio_playback_clear`` (the agent stopping itself: a barge-in) as an interruption. Every event
the agent reports (its state changes, the user's, transcripts) is kept in the trace.

Why this route: the agent runs as it would deployed (its own process, its own event loop and
threads), so its inference never delays pmc's clock, and nothing in it is pmc's. The wire is
LiveKit's own protobuf (``livekit-protocol``), installed with the ``livekit`` extra.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import struct
import sys
import tempfile
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from pmc.audio import FloatArray, resample, to_pcm16
from pmc.clock import NS_PER_S, Clock
from pmc.errors import PmcError
from pmc.systems._adapter import (
    EventKind,
    LatencyMark,
    Preload,
    SystemAdapter,
    SystemEvent,
    TransportError,
    playback_cut,
    register_adapter,
)
from pmc.systems._card import SystemCard

WIRE_RATE = 48_000
"""The console wire's rate both ways (LiveKit's ``tcp_console.WIRE_SAMPLE_RATE``)."""
HEADER = struct.Struct(">I")
"""Each message: its length, 4 bytes big-endian, then one ``AgentSessionMessage``."""
MAX_MESSAGE_BYTES = 1 << 20
"""LiveKit's own limit on one console message."""
LISTENING = "AS_LISTENING"
THINKING = "AS_THINKING"
"""The agent's state once its turn rule has ended the user's turn and it starts its reply."""
INSTALL_HINT = "pip install 'pmc[livekit]'"
BUNDLED_AGENT = Path(__file__).with_name("_livekit_agent.py")
"""pmc's own agent file (the bundled cards): Silero, a turn rule, the cascade's reply."""
CLEARED_ENV = (
    "LIVEKIT_URL",
    "LIVEKIT_API_KEY",
    "LIVEKIT_API_SECRET",
    "LIVEKIT_INFERENCE_URL",
    "LIVEKIT_INFERENCE_API_KEY",
    "LIVEKIT_INFERENCE_API_SECRET",
    "LIVEKIT_REMOTE_EOT_URL",
    "LIVEKIT_DEV_MODE",
)
"""Variables that would send the agent to LiveKit's cloud (its server, inference gateway, remote
turn detector, or cloud defaults): the agent runs with none of them."""


def _protocol() -> Any:
    try:
        from livekit.protocol.agent_pb import agent_session
    except ImportError as exc:
        raise PmcError(f"LiveKit agents need LiveKit's protocol: {INSTALL_HINT} ({exc})") from None
    return agent_session


@dataclass(frozen=True)
class LiveKitParams:
    """A LiveKit card's ``[params]``."""

    command: list[str] = field(default_factory=list)
    """How to start the agent; ``{addr}`` becomes pmc's HOST:PORT and ``{python}`` this
    interpreter. Empty: pmc's own agent file (:data:`BUNDLED_AGENT`)."""
    env: dict[str, str] = field(default_factory=dict)
    """Further environment for the agent (the bundled agent reads its settings from here)."""
    start_timeout_s: float = 60.0
    """From starting the agent to its saying it listens (imports, models, the session)."""


@register_adapter("livekit-console")
class LiveKitConsole(SystemAdapter):
    """A LiveKit agent process driven as its console peer.

    Card settings: ``[params]`` (:class:`LiveKitParams`); ``sample_rate`` must be 24000 (pmc's
    rate; the wire's 48 kHz is pmc's to convert).
    """

    VERSION = "1"
    EXTRA = "livekit"
    SENDS_TEXT = False  # audio frames only; transcripts come as events where the agent has them
    PARAMS: ClassVar[type[Any]] = LiveKitParams

    @classmethod
    def latency_mark(cls, detail: Mapping[str, Any]) -> LatencyMark | None:
        """The agent turning to thinking: its turn rule ended the user's turn."""
        changed = detail.get("agentStateChanged", {})
        return LatencyMark.ENDPOINTED if changed.get("newState") == THINKING else None

    params: LiveKitParams

    def __init__(self, card: SystemCard, clock: Clock) -> None:
        super().__init__(card, clock)
        self._pb: Any = None
        self._server: asyncio.Server | None = None
        self._accepted: asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter]] | None
        self._accepted = None
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - the agent's log, closed in close()
        self._inbox: asyncio.Queue[SystemEvent | TransportError | None] = asyncio.Queue()
        self._listening = asyncio.Event()
        self._playing_until_ns = 0
        self._segment_unplayed = False
        """Audio of the current reply received and not yet cut: a clear now is a barge-in."""
        self._finish: asyncio.Task[None] | None = None
        self._closing = False

    @classmethod
    def prepare(cls, card: SystemCard) -> None:
        """Check the card, and that LiveKit's protocol is installed, before any stream starts."""
        if card.sample_rate != 24_000:
            raise PmcError(
                f"system card {card.name}: sample_rate must be 24000 for a LiveKit agent"
            )
        _protocol()

    def _command(self, addr: str) -> list[str]:
        command = self.params.command or [
            "{python}",
            "-m",
            "livekit.agents",
            "console",
            str(BUNDLED_AGENT),
            "--connect-addr",
            "{addr}",
        ]
        return [
            part.replace("{addr}", addr).replace("{python}", sys.executable) for part in command
        ]

    async def connect(self) -> None:
        """Listen on a loopback port and start the agent, which connects to it."""
        self._pb = _protocol()
        loop = asyncio.get_running_loop()
        self._accepted = loop.create_future()

        def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            if self._accepted is not None and not self._accepted.done():
                self._accepted.set_result((reader, writer))
            else:
                writer.close()  # one agent per rollout

        self._server = await asyncio.start_server(accept, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        env = {k: v for k, v in os.environ.items() if k not in CLEARED_ENV}
        env.update(self.params.env)
        try:
            self._process = await asyncio.create_subprocess_exec(
                *self._command(f"127.0.0.1:{port}"),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=self._log,
                stderr=self._log,
                env=env,
                start_new_session=True,  # its second signal kills its whole process group
            )
        except OSError as exc:
            raise self._fail(f"cannot start the agent ({exc})") from None
        detail = {"type": "pmc.console", "addr": f"127.0.0.1:{port}", "pid": self._process.pid}
        self._inbox.put_nowait(SystemEvent(EventKind.SIGNAL, self.clock.now_ns(), detail=detail))

    async def preload(self, preload: Preload) -> None:
        """Wait for the agent to connect and say it is listening (it hears the live call only)."""
        assert self._accepted is not None
        try:
            async with asyncio.timeout(self.params.start_timeout_s):
                reader, self._writer = await self._accepted
                self._reader_task = asyncio.get_running_loop().create_task(self._read(reader))
                await self._listening.wait()
        except TimeoutError:
            raise self._fail(
                f"the agent did not connect and listen within {self.params.start_timeout_s:g} s"
            ) from None

    def _fail(self, what: str) -> TransportError:
        tail = self._log_tail()
        return TransportError(
            f"system card {self.card.name}: {what}" + (f"; its log ends: {tail}" if tail else "")
        )

    def _log_tail(self) -> str:
        with contextlib.suppress(OSError, ValueError):
            self._log.seek(0, os.SEEK_END)
            size = self._log.tell()
            self._log.seek(max(0, size - 600))
            return " | ".join(self._log.read().decode("utf-8", "replace").split("\n")[-6:])
        return ""

    # -- streaming ----------------------------------------------------------------------------

    async def _send(self, message: Any) -> None:
        if self._writer is None:
            raise self._fail("not connected")
        data = message.SerializeToString()
        try:
            self._writer.write(HEADER.pack(len(data)) + data)
            await self._writer.drain()
        except (ConnectionError, OSError) as exc:
            raise self._fail(f"connection lost while sending ({exc})") from None

    async def send_frame(self, samples: FloatArray) -> None:
        """One frame as the console's microphone: 16-bit PCM at 48 kHz.

        Resampled frame by frame (as :class:`~pmc.systems._twilio.TwilioMediaStreams` does): a
        streaming resampler holds input back and releases it in bursts, so the agent would hear
        each frame tens of ms after its deadline.
        """
        wide = resample(samples, self.card.sample_rate, WIRE_RATE)
        pcm = to_pcm16(wide).astype("<i2", copy=False)
        frame = self._pb.AgentSessionMessage.ConsoleIO.AudioFrame(
            data=pcm.tobytes(), sample_rate=WIRE_RATE, num_channels=1, samples_per_channel=len(pcm)
        )
        await self._send(self._pb.AgentSessionMessage(audio_input=frame))

    async def end_of_input(self) -> None:
        """Nothing to signal: the agent finds the turn's end itself."""

    # -- what arrives -------------------------------------------------------------------------

    async def _read(self, reader: asyncio.StreamReader) -> None:
        """Stamp each message on receipt, then decode it (decoding is cheap: no queue needed)."""
        try:
            while True:
                header = await reader.readexactly(HEADER.size)
                arrival_ns = self.clock.now_ns()
                (length,) = HEADER.unpack(header)
                if length > MAX_MESSAGE_BYTES:
                    self._inbox.put_nowait(self._fail(f"a message of {length} bytes"))
                    return
                data = await reader.readexactly(length)
                message = self._pb.AgentSessionMessage()
                message.ParseFromString(data)
                for event in self._decode(arrival_ns, message):
                    self._inbox.put_nowait(event)
        except asyncio.IncompleteReadError:
            self._inbox.put_nowait(None if self._closing else self._fail("the agent disconnected"))
        except (ConnectionError, OSError) as exc:
            self._inbox.put_nowait(
                None if self._closing else self._fail(f"connection lost ({exc})")
            )

    def _decode(self, arrival_ns: int, message: Any) -> list[SystemEvent]:
        kind = message.WhichOneof("message")
        if kind == "audio_output":
            return self._audio(arrival_ns, message.audio_output)
        if kind == "audio_playback_flush":
            self._finish_after_playback()
            return [SystemEvent(EventKind.SIGNAL, arrival_ns, detail={"type": kind})]
        if kind == "audio_playback_clear":
            return self._clear(arrival_ns)
        if kind == "event":
            from google.protobuf.json_format import MessageToDict

            detail = MessageToDict(message.event)
            state = detail.get("agentStateChanged", {}).get("newState")
            if state == LISTENING:
                self._listening.set()
            name = message.event.WhichOneof("event") or "event"
            return [SystemEvent(EventKind.SIGNAL, arrival_ns, detail={"type": name, **detail})]
        return [SystemEvent(EventKind.SIGNAL, arrival_ns, detail={"type": kind or "unknown"})]

    def _audio(self, arrival_ns: int, frame: Any) -> list[SystemEvent]:
        pcm = np.frombuffer(frame.data, dtype="<i2")
        if frame.num_channels > 1:
            pcm = pcm.reshape(-1, frame.num_channels)[:, 0]
        rate = frame.sample_rate or WIRE_RATE
        wide = pcm.astype(np.float32) / 32768.0
        if rate != WIRE_RATE:
            raise self._fail(f"agent audio at {rate} Hz on the {WIRE_RATE} Hz console wire")
        # Per frame, not streamed: soxr's stream released a reply's first frames only with a
        # later frame (blocks of about 830 samples), stamping its onset as late as that frame.
        samples = resample(wide, rate, self.card.sample_rate)
        if not len(samples):
            return []
        start = max(arrival_ns, self._playing_until_ns)
        self._playing_until_ns = start + len(samples) * NS_PER_S // self.card.sample_rate
        self._segment_unplayed = True
        return [SystemEvent(EventKind.AUDIO, arrival_ns, samples=samples)]

    def _finish_after_playback(self) -> None:
        """Tell the agent its reply has played, once pmc's playback reaches its end."""
        until_ns = self._playing_until_ns

        async def finish() -> None:
            await self.clock.sleep_until(until_ns)
            self._segment_unplayed = False
            await self._send(
                self._pb.AgentSessionMessage(
                    audio_playback_finished=self._pb.AgentSessionMessage.ConsoleIO.AudioPlaybackFinished()
                )
            )

        if self._finish is not None and not self._finish.done():
            self._finish.cancel()
        self._finish = asyncio.get_running_loop().create_task(finish())

    def _clear(self, at_ns: int) -> list[SystemEvent]:
        """The agent stopped its reply: what had not played is dropped (once per reply)."""
        events = [SystemEvent(EventKind.SIGNAL, at_ns, detail={"type": "audio_playback_clear"})]
        if self._finish is not None and not self._finish.done():
            self._finish.cancel()  # after a clear the agent finishes the segment itself
        if self._segment_unplayed:
            self._segment_unplayed = False
            stop = playback_cut(at_ns, self._playing_until_ns, "audio_playback_clear")
            if stop is not None:
                self._playing_until_ns = at_ns
                events.append(stop)
        return events

    async def events(self) -> AsyncIterator[SystemEvent]:
        """Everything the agent sent, stamped on receipt, until it disconnects or is closed."""
        while True:
            item = await self._inbox.get()
            if item is None:
                return
            if isinstance(item, TransportError):
                raise item
            yield item

    async def close(self) -> None:
        """Disconnect, then stop the agent (its own shutdown first, then its process group)."""
        self._closing = True
        if self._finish is not None:
            self._finish.cancel()
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await self._writer.wait_closed()
        if self._reader_task is not None:
            self._reader_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader_task
        if self._server is not None:
            self._server.close()
        await self._stop_agent()
        self._log.close()
        self._inbox.put_nowait(None)

    async def _stop_agent(self) -> None:
        process = self._process
        if process is None or process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGINT)
            try:
                await asyncio.wait_for(process.wait(), 10.0)
            except TimeoutError:
                os.killpg(process.pid, signal.SIGKILL)
                await process.wait()
