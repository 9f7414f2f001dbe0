"""Our server's preload route (``pmc serve-duplex``, ``/api/duplex``): history first, then live.

Before the live stream the adapter sends the history exactly as the paper's protocol gives it to
a full-duplex system (docs/architecture.md "Protocol"): the other speaker's audio, the system's own
audio and the system's words with their times, all on the history's clock (seconds from its first
sample). The server teacher-forces them frame by frame, reports what it forced (0x14, kept in the
trace as a signal), sends the handshake, and the session goes on exactly as the stock protocol's
(:mod:`pmc.systems._duplex_client._moshi_stock`).

Messages, each a kind byte then the payload (:class:`pmc.duplex_server.Kind`): 0x10 a JSON
header (prompt, seed, sample counts, words), 0x11 and 0x12 the two history tracks as PCM16 in
chunks of at most 1 MiB, 0x13 commit.

Card params: ``identity_prompt`` (send the point's identity prompt; the server forces it as
text before the history), ``send_seed`` (seed the server's sampling per rollout),
``max_history_frames`` (cap the history below the server's own cap: 2048 for PersonaPlex),
``query``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

from pmc.audio import FloatArray, to_pcm16
from pmc.duplex_server import HISTORY_CHUNK_BYTES, Kind
from pmc.systems._adapter import EventKind, Preload, SystemEvent, register_adapter
from pmc.systems._duplex_client._moshi_stock import MoshiParams, MoshiStockAdapter

PRELOAD_VERSION = 1
"""The header's format; the server refuses one it does not know."""


def _chunks(kind: Kind, samples: FloatArray) -> list[bytes]:
    """A history track as PCM16 messages of at most :data:`HISTORY_CHUNK_BYTES` each."""
    data = to_pcm16(samples).astype("<i2", copy=False).tobytes()
    step = HISTORY_CHUNK_BYTES - HISTORY_CHUNK_BYTES % 2
    return [bytes([kind]) + data[i : i + step] for i in range(0, len(data), step)]


def preload_header(
    preload: Preload, identity_prompt: bool, send_seed: bool, max_history_frames: int | None
) -> bytes:
    """The 0x10 message: what the server needs before the audio arrives."""
    header = {
        "max_history_frames": max_history_frames,
        "version": PRELOAD_VERSION,
        "text_prompt": preload.identity_prompt if identity_prompt else "",
        "seed": preload.seed if send_seed else None,
        "user_samples": len(preload.user_audio),
        "system_samples": len(preload.system_audio),
        "words": [[w.text, w.start_s, w.end_s] for w in preload.system_words],
    }
    return bytes([Kind.PRELOAD]) + json.dumps(header).encode()


@dataclass(frozen=True)
class PreloadedParams(MoshiParams):
    """A preload-route card's ``[params]``: the Moshi protocol's, and the history's cap."""

    max_history_frames: int | None = None
    """The most history frames the server forces (None: the server's own cap)."""


@register_adapter("moshi-preloaded")
class MoshiPreloadedAdapter(MoshiStockAdapter):
    """The stock protocol after a teacher-forced history, on ``pmc serve-duplex``."""

    VERSION = "1"
    PARAMS: ClassVar[type[Any]] = PreloadedParams
    params: PreloadedParams

    async def preload(self, preload: Preload) -> None:
        """Send the history, wait for the server to force it, then for the handshake."""
        if len(preload.user_audio) != len(preload.system_audio):
            raise self.fail(
                f"the two history tracks differ in length "
                f"({len(preload.user_audio)} and {len(preload.system_audio)} samples)"
            )
        params = self.params
        ws = await self.open(self._url({}))
        messages = [
            preload_header(
                preload, params.identity_prompt, params.send_seed, params.max_history_frames
            ),
            *_chunks(Kind.USER_HISTORY, preload.user_audio),
            *_chunks(Kind.SYSTEM_HISTORY, preload.system_audio),
            bytes([Kind.COMMIT]),
        ]
        for message in messages:
            await self.send(message, lost="closed while sending the history")
        await self._until_handshake(ws)

    def _before_handshake(self, arrival_ns: int, kind: int, payload: bytes) -> SystemEvent:
        """The server's report of what it forced, kept in the trace as a signal."""
        if kind != Kind.PRIMED:
            return super()._before_handshake(arrival_ns, kind, payload)
        try:
            detail = json.loads(payload)
        except json.JSONDecodeError as exc:
            raise self.fail(f"malformed preload report ({exc})") from None
        if not isinstance(detail, dict):
            raise self.fail("the preload report is not an object")
        return SystemEvent(EventKind.SIGNAL, arrival_ns, detail={"type": "primed", **detail})
