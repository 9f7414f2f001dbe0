"""Streaming voice-activity detection: the Silero VAD v6 model that faster-whisper bundles.

The model scores 512-sample windows of 16 kHz audio, each prefixed with the last 64 samples of
the window before it, and carries an LSTM state from window to window (as
``faster_whisper.vad.SileroVADModel`` calls it). Keeping that context and state between pushes
makes a stream scored piece by piece give exactly the probabilities of the whole signal scored
at once (tests/systems/test_endpointer.py checks it).
"""

from __future__ import annotations

import functools
import importlib
import importlib.resources
from typing import Any

import numpy as np

from pmc.audio import FloatArray
from pmc.errors import PmcError
from pmc.models import Model, verify

VAD_RATE = 16_000
"""Silero VAD takes 16 kHz audio."""

WINDOW = 512
"""Samples per scored window at 16 kHz (32 ms): the only window size Silero v5 and v6 accept."""

CONTEXT = 64
"""Samples of the previous window prefixed to each one (faster_whisper.vad.SileroVADModel)."""

_STATE_SHAPE = (1, 1, 128)
"""The LSTM's ``h`` and ``c`` inputs, as the bundled ONNX graph declares them."""


@functools.cache
def load_model() -> Any:
    """The ONNX session, loaded once per process, single-threaded like faster-whisper's own.

    One thread: the demo runs several rollouts at once on two cores, and a 32 ms window is too
    small to gain from more.
    """
    try:
        ort = importlib.import_module("onnxruntime")
    except ImportError:  # pragma: no cover - installed with faster-whisper
        raise PmcError("the VAD needs onnxruntime: pip install onnxruntime") from None
    verify(Model.SILERO_VAD)
    model = importlib.resources.files("faster_whisper") / "assets" / "silero_vad_v6.onnx"
    options = ort.SessionOptions()
    options.inter_op_num_threads = 1
    options.intra_op_num_threads = 1
    options.enable_cpu_mem_arena = False
    options.log_severity_level = 4  # errors only: the graph's initialiser warnings are noise
    with importlib.resources.as_file(model) as path:
        return ort.InferenceSession(
            str(path), providers=["CPUExecutionProvider"], sess_options=options
        )


class StreamingVad:
    """Speech probabilities of 16 kHz audio pushed in pieces of any length.

    Samples that do not yet fill a window wait for the next push; a trailing part window is
    never scored.

    Attributes:
        windows: Windows scored so far; window ``k`` covers samples ``[k * WINDOW, (k + 1) *
            WINDOW)`` of everything pushed since the last reset.
    """

    def __init__(self) -> None:
        self._session = load_model()
        self.reset()

    def reset(self) -> None:
        """Forget all audio and state, as if nothing had been pushed."""
        self._h = np.zeros(_STATE_SHAPE, dtype=np.float32)
        self._c = np.zeros(_STATE_SHAPE, dtype=np.float32)
        self._context = np.zeros(CONTEXT, dtype=np.float32)
        self._pending = np.zeros(0, dtype=np.float32)
        self.windows = 0

    def push(self, audio: FloatArray) -> FloatArray:
        """Add ``audio`` and score every window it completes.

        Returns:
            One probability per newly completed window, in order (possibly none).
        """
        samples = np.concatenate([self._pending, np.asarray(audio, dtype=np.float32).ravel()])
        count = len(samples) // WINDOW
        self._pending = samples[count * WINDOW :]
        if count == 0:
            return np.zeros(0, dtype=np.float32)
        windows = samples[: count * WINDOW].reshape(count, WINDOW)
        contexts = np.concatenate([self._context[None, :], windows[:-1, -CONTEXT:]])
        batch = np.ascontiguousarray(np.concatenate([contexts, windows], axis=1))
        # The graph runs its LSTM along the batch axis, so one call scores the windows in order.
        probabilities, self._h, self._c = self._session.run(
            None, {"input": batch, "h": self._h, "c": self._c}
        )
        self._context = windows[-1, -CONTEXT:].copy()
        self.windows += count
        return np.asarray(probabilities, dtype=np.float32).reshape(count)


def speech_probabilities(audio: FloatArray) -> FloatArray:
    """Probabilities of every whole window of 16 kHz ``audio``, scored in one push."""
    return StreamingVad().push(audio)
