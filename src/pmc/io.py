"""Atomic, deterministic file writing shared by every stage (docs/architecture.md "On disk")."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from pmc.errors import InputError

FILE_MODE = 0o644
TEMP_SUFFIX = ".tmp"
"""What :func:`atomic_open`'s temporary files end with (they start with a dot and the name)."""


@contextmanager
def atomic_open(path: Path, mode: str = "w") -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path``; rename it over ``path`` only if the block succeeds.

    A killed process leaves either the old file or the new one, never half of one (and
    perhaps the temporary file, which :func:`remove_temporaries` clears).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
    os.fchmod(fd, FILE_MODE)  # mkstemp makes files private; outputs are meant to be shared
    try:
        encoding = None if "b" in mode else "utf-8"
        with os.fdopen(fd, mode, encoding=encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def remove_temporaries(folder: Path, recursive: bool = True) -> int:
    """Delete the temporary files a killed :func:`atomic_open` left in ``folder``; how many.

    A stage calls it when it starts, on the folders only it writes: a temporary file of a
    process still writing there would go too.
    """
    pattern = f".*{TEMP_SUFFIX}"
    found = folder.rglob(pattern) if recursive else folder.glob(pattern)
    removed = 0
    for tmp in found:
        if tmp.is_file():
            tmp.unlink(missing_ok=True)
            removed += 1
    return removed


def dumps(data: Any) -> str:
    """Serialise to canonical JSON: sorted keys, fixed indentation, trailing newline."""
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as canonical JSON, atomically."""
    with atomic_open(path) as handle:
        handle.write(dumps(data))


def write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` atomically."""
    with atomic_open(path, "wb") as handle:
        handle.write(data)


def read_json(path: Path) -> Any:
    """Read a JSON file written by :func:`write_json`."""
    return json.loads(path.read_text(encoding="utf-8"))


def read_toml(path: Path) -> dict[str, Any]:
    """A TOML file as a table; an unreadable or invalid file is an InputError naming it."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(path, f"invalid TOML ({exc})") from None
    except OSError as exc:
        raise InputError(path, f"cannot read ({exc.strerror})") from None


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def schema_version(data: dict[str, Any], supported: int, what: str) -> int:
    """The ``schema_version`` of a stored record; refuses one this pmc cannot read."""
    version = int(data.get("schema_version", -1))
    if version != supported:
        raise ValueError(
            f"{what} schema version {version} is not supported (this pmc reads version {supported})"
        )
    return version


def json_line(data: Any) -> str:
    """One canonical JSON Lines record: sorted keys, no spaces, a newline."""
    return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"


def write_text(path: Path, text: str) -> None:
    """Write UTF-8 text atomically."""
    with atomic_open(path) as handle:
        handle.write(text)


__all__ = [
    "FILE_MODE",
    "TEMP_SUFFIX",
    "atomic_open",
    "dumps",
    "json_line",
    "read_json",
    "remove_temporaries",
    "schema_version",
    "sha256_file",
    "write_bytes",
    "write_json",
    "write_text",
]
