"""One model instance: Mimi + the LM, teacher-forced through a history, then stepped live.

Imports PyTorch and moshi, so it runs only in the duplex environment (:data:`INSTALL_HINT`).

Timeline. ``LMGen.step`` call ``i`` (from 0 after a reset) feeds the user's frame ``i`` and
writes the system's tokens for frame ``i + 1``: text and the first codebook undelayed, codebook
``k`` ``delays[1 + k]`` frames later (moshi ``lm.py``: user frames are written at their
delay, generated tokens one position ahead). So user frame ``j`` and system frame ``j`` are the
same 80 ms of the conversation, and forcing means: at step ``i``, text := the history's token of
frame ``i + 1``, codebook ``k`` := the history's code of frame ``i + 1 - delays[1 + k]``, where
those frames exist. The text is replaced after sampling (``on_text_hook``), before the
depformer sees it; the codes after the depformer (``on_audio_hook``), or instead of it
(``depformer_replace_tokens``) when every codebook is forced. Frames of the system's history
whose delayed codebooks fall past the history are forced during the first live steps, as the
delays require. Frame 0 of the history is the model's initial token and cannot be forced.

``step`` returns the tokens of frame ``i + 1 - max_delay``; a live step whose frame still lies
in the history sends nothing (the model's own latency, as on the stock server).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from pmc.duplex_server._align import EPAD, PAD, TimedText, align_words, prompt_tokens
from pmc.duplex_server._wire import FRAME_RATE_HZ, FRAME_SAMPLES, INSTALL_HINT, SAMPLE_RATE

try:
    import sentencepiece
    import torch
    from moshi.models import LMGen, loaders
except ImportError as _exc:  # pragma: no cover - reported by the CLI before we get here
    raise ImportError(f"{_exc}. {INSTALL_HINT}") from _exc

FloatArray = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Weights:
    """Where a model's files are: local paths, or a hub repository for what is not given.

    Attributes:
        hf_repo: A hub repository (``kyutai/moshiko-pytorch-bf16``) for files not given.
        config: The LM's ``config.json`` (moshi's format).
        moshi_weight: The LM's safetensors.
        mimi_weight: Mimi's safetensors.
        tokenizer: The SentencePiece model.
    """

    hf_repo: str = "kyutai/moshiko-pytorch-bf16"
    config: Path | None = None
    moshi_weight: Path | None = None
    mimi_weight: Path | None = None
    tokenizer: Path | None = None


@dataclass(frozen=True)
class Sampling:
    """LMGen's sampling settings; moshi's own defaults (``LMGen.__init__``)."""

    temp: float = 0.8
    temp_text: float = 0.7
    top_k: int = 250
    top_k_text: int = 25


@dataclass(frozen=True)
class PrimeReport:
    """What a prefill forced; sent to the client (0x14) and kept in its trace.

    Attributes:
        prompt_frames: Frames of identity prompt forced before the history.
        history_frames: Frames of history forced (after the cap).
        truncated_frames: History frames dropped from the front by the cap.
        forced_words: The system's words forced, at least in part.
        elapsed_s: Wall time of the prefill.
    """

    prompt_frames: int
    history_frames: int
    truncated_frames: int
    forced_words: int
    elapsed_s: float

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "prompt_frames": self.prompt_frames,
            "history_frames": self.history_frames,
            "truncated_frames": self.truncated_frames,
            "forced_words": self.forced_words,
            "elapsed_s": round(self.elapsed_s, 4),
        }


@dataclass
class _Forcing:
    """The tokens to force, by frame of the forced timeline (prompt, then history)."""

    text: list[int]
    codes: npt.NDArray[np.int64]
    """``[dep_q, frames]``: the system's own audio codes."""

    @property
    def frames(self) -> int:
        return len(self.text)


@dataclass
class StepTimes:
    """Per-step wall times of live steps, for ``pmc bench duplex``."""

    ms: list[float] = field(default_factory=list)

    KEEP = 100_000
    """Steps kept (over 2 hours of live audio); the older half goes when it is reached."""

    def add(self, seconds: float) -> None:
        """Keep one step's time."""
        self.ms.append(seconds * 1000)
        if len(self.ms) > self.KEEP:
            del self.ms[: self.KEEP // 2]


class Engine:
    """One loaded model; one session at a time (the server hands it to one session at once).

    Every method that touches the model is blocking and runs on :attr:`executor`, this
    instance's own thread, so that several instances step in parallel.
    """

    def __init__(
        self,
        weights: Weights,
        device: str,
        dtype: str,
        sampling: Sampling,
        max_history_frames: int | None,
        index: int = 0,
    ) -> None:
        info = loaders.CheckpointInfo.from_hf_repo(
            weights.hf_repo,
            moshi_weights=weights.moshi_weight,
            mimi_weights=weights.mimi_weight,
            tokenizer=weights.tokenizer,
            config_path=weights.config,
        )
        self.index = index
        self.device = torch.device(device)
        self.mimi = info.get_mimi(device=device)
        self.history_mimi = info.get_mimi(device=device)
        """Encodes the system's history in one batch, apart from the live encoder's state."""
        torch_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[dtype]
        self.lm = info.get_moshi(device=device, dtype=torch_dtype)
        self.tokenizer: Any = sentencepiece.SentencePieceProcessor(str(info.tokenizer))
        self.lm_gen = LMGen(
            self.lm,
            temp=sampling.temp,
            temp_text=sampling.temp_text,
            top_k=sampling.top_k,
            top_k_text=sampling.top_k_text,
            on_text_hook=self._force_text,
            on_audio_hook=self._force_audio,
            **info.lm_gen_config,
        )
        self.delays: list[int] = list(self.lm.delays)
        self.dep_q: int = int(self.lm.dep_q)
        self.max_delay = max(self.delays)
        context = int(info.lm_config["context"]) if info.lm_config else 3000
        self.max_history_frames = max_history_frames or context
        self.executor = ThreadPoolExecutor(1, thread_name_prefix=f"duplex-{index}")
        self.times = StepTimes()
        self._forcing = _Forcing([], np.zeros((self.dep_q, 0), dtype=np.int64))
        self._step = 0
        self.mimi.streaming_forever(1)
        self.lm_gen.streaming_forever(1)

    # -- forcing hooks (called by LMGen inside step) -------------------------------------------

    def _forced_text(self, step: int) -> int | None:
        frame = step + 1
        return self._forcing.text[frame] if frame < self._forcing.frames else None

    def _forced_codes(self, step: int) -> list[int | None]:
        out: list[int | None] = []
        for k in range(self.dep_q):
            frame = step + 1 - self.delays[1 + k]
            ok = 0 <= frame < self._forcing.frames
            out.append(int(self._forcing.codes[k, frame]) if ok else None)
        return out

    def _force_text(self, text_token: Any) -> None:
        forced = self._forced_text(self._step)
        if forced is not None:
            text_token.fill_(forced)

    def _force_audio(self, audio_tokens: Any) -> None:
        for k, code in enumerate(self._forced_codes(self._step)):
            if code is not None:
                audio_tokens[:, k] = code

    # -- sessions ------------------------------------------------------------------------------

    def reset(self, seed: int | None) -> None:
        """Start a session: fresh streaming state, nothing to force, seeded sampling."""
        if seed is not None:
            torch.manual_seed(seed)
            np.random.seed(seed % 2**32)
        self.mimi.reset_streaming()
        self.lm_gen.reset_streaming()
        self._forcing = _Forcing([], np.zeros((self.dep_q, 0), dtype=np.int64))
        self._step = 0

    def tokenize(self, text: str) -> list[int]:
        """A text's SentencePiece ids."""
        return [int(t) for t in self.tokenizer.encode(text)]

    def piece(self, token: int) -> str | None:
        """What a text token says, ``▁`` as a space; None for padding."""
        if token in (PAD, EPAD):
            return None
        return str(self.tokenizer.id_to_piece(token)).replace("▁", " ")

    def prime(
        self,
        prompt: str,
        user: FloatArray,
        system: FloatArray,
        words: list[TimedText],
        max_history_frames: int | None = None,
        record: list[Any] | None = None,
    ) -> PrimeReport:
        """Force the identity prompt and the history into the model (after :meth:`reset`).

        Args:
            prompt: The identity prompt ("" for none): its tokens are forced as text over
                silence, before the history.
            user: The other speaker's history; it ends where the live stream begins.
            system: The system's own history, as long as ``user``.
            words: The system's words on the history's clock.
            max_history_frames: A lower cap than the server's, if the client asks for one.
            record: If given, each step's output tokens are appended (tests).
        """
        started = time.perf_counter()
        cap = min(self.max_history_frames, max_history_frames or self.max_history_frames)
        whole = min(len(user), len(system)) // FRAME_SAMPLES
        kept = min(whole, cap)
        # Cut from the front: the history's last sample must meet the live stream's first.
        cut_samples = len(user) - kept * FRAME_SAMPLES
        cut_s = cut_samples / SAMPLE_RATE
        user_kept, system_kept = user[cut_samples:], system[len(system) - kept * FRAME_SAMPLES :]
        prompt_ids = prompt_tokens(prompt, self.tokenize)
        silence = np.zeros(len(prompt_ids) * FRAME_SAMPLES, dtype=np.float32)
        user_all = np.concatenate([silence, user_kept])
        system_all = np.concatenate([silence, system_kept])
        frames = len(user_all) // FRAME_SAMPLES
        shifted = [(t, s - cut_s, e - cut_s) for t, s, e in words]
        text = align_words(shifted, frames, self.tokenize, offset_frames=len(prompt_ids))
        text[: len(prompt_ids)] = prompt_ids
        forced_words = sum(1 for _, s, _ in shifted if s >= 0 and s * FRAME_RATE_HZ < kept)
        with torch.no_grad():
            codes = np.zeros((self.dep_q, 0), dtype=np.int64)
            if frames:
                pcm = torch.from_numpy(system_all).to(self.device)[None, None]
                codes = self.history_mimi.encode(pcm)[0, : self.dep_q].cpu().numpy()
            self._forcing = _Forcing(text, codes.astype(np.int64))
            if frames:
                pcm = torch.from_numpy(user_all).to(self.device)[None, None]
                user_codes = self.mimi.encode(pcm)
                for c in range(user_codes.shape[-1]):
                    out = self._lm_step(user_codes[:, :, c : c + 1])
                    if record is not None:
                        record.append(None if out is None else out[0, :, 0].cpu().numpy())
        return PrimeReport(
            len(prompt_ids), kept, whole - kept, forced_words, time.perf_counter() - started
        )

    def _lm_step(self, codes: Any) -> Any:
        """One LM step, forcing what the forcing says for it."""
        forced = self._forced_codes(self._step)
        replace = None
        if all(c is not None for c in forced):
            replace = torch.tensor([forced], dtype=torch.long, device=self.device)[:, :, None]
        out = self.lm_gen.step(codes, depformer_replace_tokens=replace)
        self._step += 1
        return out

    def step(self, pcm: FloatArray) -> tuple[FloatArray | None, str | None]:
        """One live 80 ms frame in; the system's audio and text piece for its output frame."""
        started = time.perf_counter()
        audio: FloatArray | None = None
        text: str | None = None
        with torch.no_grad():
            chunk = torch.from_numpy(np.ascontiguousarray(pcm, dtype=np.float32))
            codes = self.mimi.encode(chunk.to(self.device)[None, None])
            for c in range(codes.shape[-1]):
                frame = self._step + 1 - self.max_delay
                tokens = self._lm_step(codes[:, :, c : c + 1])
                if tokens is None or frame < self._forcing.frames:
                    continue  # still the history's frames: heard, not said
                out = self.mimi.decode(tokens[:, 1:])
                audio = out[0, 0].float().cpu().numpy()
                text = self.piece(int(tokens[0, 0, 0]))
        self.times.add(time.perf_counter() - started)
        return audio, text

    def silence_step_ms(self, steps: int) -> list[float]:
        """Time ``steps`` live steps on silence (a fresh session); returns each in ms."""
        self.reset(0)
        silence = np.zeros(FRAME_SAMPLES, dtype=np.float32)
        times = []
        for _ in range(steps):
            started = time.perf_counter()
            self.step(silence)
            times.append((time.perf_counter() - started) * 1000)
        return times
